// Builds without libtorch (configure with -DSTREAMSAFE_TORCH_DIR=<site-packages/torch>).
#include "bench_resource.hpp"

namespace streamsafe::bench {

std::unique_ptr<bench_resource> make_torch_caching(std::string& why) {
  why = "built without libtorch (configure with -DSTREAMSAFE_TORCH_DIR=<site-packages/torch>)";
  return nullptr;
}

}  // namespace streamsafe::bench
