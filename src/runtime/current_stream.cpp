#include "streamsafe/current_stream.hpp"

#include <algorithm>
#include <vector>

#include "common/expects.hpp"
#include "runtime/stream_impl.hpp"
#include "streamsafe/device.hpp"

namespace streamsafe {

namespace {
// The guards alive on this thread, innermost last. A handful at most, so a vector beats a map.
thread_local std::vector<detail::StreamImpl*> guarded_streams;
}  // namespace

StreamRef current_stream(const Device& device) {
  auto* wanted = &device.impl();
  auto it = std::find_if(guarded_streams.rbegin(), guarded_streams.rend(),
                         [wanted](detail::StreamImpl* s) { return &s->device() == wanted; });
  return it != guarded_streams.rend() ? StreamRef(*it) : device.default_stream();
}

StreamGuard::StreamGuard(StreamRef stream) : stream_(stream) {
  guarded_streams.push_back(&stream.impl());
}

StreamGuard::~StreamGuard() {
  // Guards are scoped objects, so the innermost is the one being destroyed.
  guarded_streams.pop_back();
}

}  // namespace streamsafe
