// What the torch allocator needs from the platform: the cuda runtime in the shared library, a
// sim device in the tests (which run the same allocator code without a GPU).
#pragma once

#include <functional>

#include "streamsafe/device.hpp"
#include "streamsafe/kernel.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::torch_alloc {

struct torch_backend {
  /// The device torch means by `ordinal`.
  std::function<Device(int ordinal)> device;
  /// A non-owning wrapper of a foreign stream that is not the legacy default stream.
  std::function<Stream(const Device& device, native_stream native)> adopt;
  /// Whether a graph is being captured on `native` (an error answer counts as yes).
  std::function<bool(native_stream native)> capturing;
};

/// The backend of the build: cuda in the shared library, a test's own in the tests.
[[nodiscard]] torch_backend default_backend();

}  // namespace streamsafe::torch_alloc
