// Builds without CUDA: the cuda cases report why they are skipped.
#include "bench_resource.hpp"
#include "replay_resource.hpp"

namespace streamsafe::bench {

namespace {
constexpr const char* no_cuda = "built without CUDA";
}  // namespace

std::unique_ptr<bench_resource> make_cuda_malloc(std::string& why) {
  why = no_cuda;
  return nullptr;
}

std::unique_ptr<bench_resource> make_cuda_malloc_async(std::string& why) {
  why = no_cuda;
  return nullptr;
}

replay_resource make_cuda_async_replay() { return replay_resource{.why = no_cuda}; }

}  // namespace streamsafe::bench
