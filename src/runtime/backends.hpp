// Factories of the backends compiled into this build.
#pragma once

#include <memory>

#include "streamsafe/sim_options.hpp"

namespace streamsafe::detail {

class DeviceImpl;

[[nodiscard]] std::shared_ptr<DeviceImpl> make_sim_device(const sim_options& options);

/// Defined by the cuda backend, or by no_cuda.cpp when the build has none.
[[nodiscard]] std::shared_ptr<DeviceImpl> make_cuda_device(int ordinal);
[[nodiscard]] int cuda_device_count() noexcept;

}  // namespace streamsafe::detail
