// A share of a stream for resources that use it after the user's handle may be gone (a free
// ordered on a stream destroyed first, an event recorded on a stream recorded with
// record_stream): the stream lives until the last share goes.
#pragma once

#include <memory>

#include "runtime/stream_impl.hpp"

namespace streamsafe::detail {

/// Owns a share when a Stream handle owns `stream`; a stream without one (a device's default
/// stream) lives as long as its device, so the holder must keep the Device.
[[nodiscard]] inline std::shared_ptr<StreamImpl> share_stream(StreamImpl& stream) {
  if (std::shared_ptr<StreamImpl> owned = stream.weak_from_this().lock()) return owned;
  return std::shared_ptr<StreamImpl>(std::shared_ptr<StreamImpl>{}, &stream);  // aliases, owns nothing
}

}  // namespace streamsafe::detail
