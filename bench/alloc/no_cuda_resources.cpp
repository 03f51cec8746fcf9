// Builds without CUDA: the cuda cases report why they are skipped.
#include "bench_resource.hpp"

namespace streamsafe::bench {

std::unique_ptr<bench_resource> make_cuda_malloc(std::string& why) {
  why = "built without CUDA";
  return nullptr;
}

std::unique_ptr<bench_resource> make_cuda_malloc_async(std::string& why) {
  why = "built without CUDA";
  return nullptr;
}

}  // namespace streamsafe::bench
