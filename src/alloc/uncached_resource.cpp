// uncached_resource: every request goes to the device, every free is stream-ordered.
#include "streamsafe/alloc/uncached_resource.hpp"

#include <mutex>
#include <unordered_map>
#include <vector>

#include "alloc/stream_share.hpp"
#include "alloc/uncached_backend.hpp"
#include "common/expects.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/stream_impl.hpp"
#include "streamsafe/event_pool.hpp"

namespace streamsafe {

namespace detail {

// Shares, not pointers: the free is ordered on `stream` and waits on `recorded`, and either may
// be destroyed by the user before the block is freed.
struct uncached_block {
  std::shared_ptr<StreamImpl> stream;
  std::vector<std::shared_ptr<StreamImpl>> recorded;
};

class uncached_state {
 public:
  explicit uncached_state(const Device& device) : device(device), events(device) {}
  Device device;
  EventPool events;
  std::mutex mutex;
  std::unordered_map<void*, uncached_block> live;
};

}  // namespace detail

namespace {

void* device_allocate(detail::uncached_state& state, std::size_t bytes, StreamRef stream) {
  if (state.device.backend() == backend_kind::cuda) return detail::cuda_allocate_async(bytes, stream.native());
  try {
    return state.device.allocate(bytes);
  } catch (const out_of_memory&) {
    state.device.synchronize();  // sim frees are queued on streams: let them run, then retry
    return state.device.allocate(bytes);
  }
}

/// The free, ordered on the allocation stream after everything enqueued there so far.
void free_on_stream(detail::uncached_state& state, void* ptr, StreamRef stream) {
  if (state.device.backend() == backend_kind::cuda) {
    detail::cuda_free_async(ptr, stream.native());
    return;
  }
  Device device = state.device;
  stream.launch(kernel{"uncached_free", {}, [device, ptr]() mutable { device.deallocate(ptr); }});
}

}  // namespace

uncached_resource::uncached_resource(const Device& device) : state_(std::make_unique<detail::uncached_state>(device)) {}

uncached_resource::~uncached_resource() {
  try {
    state_->device.synchronize();  // queued frees run before the state they use goes
  } catch (...) {
    // A failed device cannot be waited for.
  }
}

void* uncached_resource::allocate(std::size_t bytes, StreamRef stream) {
  if (bytes == 0) return nullptr;
  SS_EXPECTS(&stream.impl().device() == &state_->device.impl(), "uncached_resource: stream '", stream.name(),
             "' belongs to another device");
  void* ptr = device_allocate(*state_, bytes, stream);
  std::lock_guard lock(state_->mutex);
  state_->live.emplace(ptr, detail::uncached_block{detail::share_stream(stream.impl()), {}});
  return ptr;
}

void uncached_resource::record_stream(void* ptr, StreamRef stream) {
  std::lock_guard lock(state_->mutex);
  const auto it = state_->live.find(ptr);
  SS_EXPECTS(it != state_->live.end(), "uncached_resource::record_stream(", ptr, "): not a live allocation");
  if (&stream.impl() != it->second.stream.get()) it->second.recorded.push_back(detail::share_stream(stream.impl()));
}

void uncached_resource::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  detail::uncached_block freed;
  {
    std::lock_guard lock(state_->mutex);
    const auto it = state_->live.find(ptr);
    SS_EXPECTS(it != state_->live.end(), "uncached_resource::deallocate(", ptr,
               "): not a live allocation (double free, or a foreign pointer)");
    freed = std::move(it->second);
    state_->live.erase(it);
  }
  StreamRef stream(freed.stream.get());
  for (const std::shared_ptr<detail::StreamImpl>& user : freed.recorded) {
    PooledEvent done = state_->events.acquire();
    done.record(StreamRef(user.get()));
    stream.wait(done);
  }
  free_on_stream(*state_, ptr, stream);
}

}  // namespace streamsafe
