// Stands in for the cuda backend in builds without a CUDA toolkit.
#include "common/expects.hpp"
#include "runtime/backends.hpp"

namespace streamsafe::detail {

std::shared_ptr<DeviceImpl> make_cuda_device(int ordinal) {
  SS_EXPECTS(false, "Device::cuda(", ordinal, "): this build of streamsafe has no cuda backend "
             "(configure with a CUDA toolkit present, or use Device::sim())");
  return nullptr;
}

int cuda_device_count() noexcept { return 0; }

}  // namespace streamsafe::detail
