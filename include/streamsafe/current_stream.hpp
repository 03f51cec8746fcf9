// The calling thread's current stream per device: the C++ counterpart of
// `with torch.cuda.stream(s):`. Library calls that take no stream use it.
#pragma once

#include "streamsafe/stream.hpp"

namespace streamsafe {

class Device;

/// The stream of the innermost live StreamGuard of this thread for `device`, else the device's
/// default stream.
[[nodiscard]] StreamRef current_stream(const Device& device);

/// Makes `stream` current for its device on this thread until destroyed. Guards nest; they must
/// be destroyed in reverse order of creation (they live on the stack).
class StreamGuard {
 public:
  explicit StreamGuard(StreamRef stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  StreamRef stream_;
};

}  // namespace streamsafe
