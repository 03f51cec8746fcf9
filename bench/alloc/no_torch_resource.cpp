// Builds without libtorch (configure with -DSTREAMSAFE_TORCH_DIR=<site-packages/torch>).
#include "bench_resource.hpp"
#include "replay_resource.hpp"

namespace streamsafe::bench {

namespace {
constexpr const char* no_torch = "built without libtorch (configure with -DSTREAMSAFE_TORCH_DIR=<site-packages/torch>)";
}  // namespace

std::unique_ptr<bench_resource> make_torch_caching(std::string& why) {
  why = no_torch;
  return nullptr;
}

replay_resource make_c10_replay(bool) { return replay_resource{.why = no_torch}; }

}  // namespace streamsafe::bench
