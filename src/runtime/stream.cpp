#include "streamsafe/stream.hpp"

#include "common/expects.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/event_impl.hpp"
#include "runtime/event_pool_state.hpp"
#include "runtime/stream_impl.hpp"
#include "runtime/unique_id.hpp"
#include "streamsafe/runtime_observer.hpp"

namespace streamsafe {

namespace detail {

StreamImpl::StreamImpl(std::shared_ptr<DeviceImpl> device, const stream_options& options)
    : device_(std::move(device)), id_(next_unique_id<stream_id>()), name_(options.name) {
  if (name_.empty()) name_ = "stream" + std::to_string(static_cast<std::uint64_t>(id_));
}

}  // namespace detail

detail::StreamImpl& StreamRef::impl() const {
  SS_EXPECTS(impl_ != nullptr, "use of a moved-from Stream");
  return *impl_;
}

stream_id StreamRef::id() const { return impl().id(); }
const std::string& StreamRef::name() const { return impl().name(); }
Device StreamRef::device() const { return Device(impl().device_handle()); }

void StreamRef::wait(const EventRef& event) {
  auto& self = impl();
  auto& ev = event.impl();
  SS_EXPECTS(&ev.device() == &self.device(), "Stream::wait: stream '", self.name(), "' is on ",
             self.device().name(), " but event ", static_cast<std::uint64_t>(ev.id()), " is on ",
             ev.device().name());
  self.device().observers().step([&] { self.wait(ev); }, [&](RuntimeObserver& o) { o.on_stream_wait(*this, event); });
}

void StreamRef::wait(StreamRef other) {
  auto& self = impl();
  auto& producer = other.impl();
  SS_EXPECTS(&producer.device() == &self.device(), "Stream::wait: stream '", self.name(), "' is on ",
             self.device().name(), " but stream '", producer.name(), "' is on ", producer.device().name());
  auto& pool = self.device().internal_event_pool();
  auto marker = pool.take();
  // One step: no other thread's record or wait falls between the marker's record and its wait.
  self.device().observers().step(
      [&] {
        EventRef(marker.get()).record(other);
        wait(EventRef(marker.get()));
      },
      [](RuntimeObserver&) {});
  pool.give_back(std::move(marker));
}

void StreamRef::synchronize() {
  auto& self = impl();
  self.device().observers().step([&] { self.synchronize(); },
                                 [&](RuntimeObserver& o) { o.on_stream_synchronize(*this); });
}

bool StreamRef::query() {
  auto& self = impl();
  return self.device().observers().step([&] { return self.query(); }, [&](RuntimeObserver& o, bool done) {
    if (done) o.on_stream_query_complete(*this);
  });
}

void StreamRef::launch(const kernel& work) {
  auto& self = impl();
  self.device().observers().step([&] { self.launch(work); }, [&](RuntimeObserver& o) { o.on_launch(*this, work); });
}

void StreamRef::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  SS_EXPECTS(dst != nullptr && src != nullptr, "Stream::copy on '", impl().name(), "': null pointer (dst ",
             dst, ", src ", src, ") for ", bytes, " bytes");
  auto& self = impl();
  self.device().observers().step([&] { self.copy(dst, src, bytes); },
                                 [&](RuntimeObserver& o) { o.on_copy(*this, dst, src, bytes); });
}

void StreamRef::fill(void* dst, std::uint8_t value, std::size_t bytes) {
  if (bytes == 0) return;
  SS_EXPECTS(dst != nullptr, "Stream::fill on '", impl().name(), "': null pointer for ", bytes, " bytes");
  auto& self = impl();
  self.device().observers().step([&] { self.fill(dst, value, bytes); },
                                 [&](RuntimeObserver& o) { o.on_fill(*this, dst, bytes); });
}

native_stream StreamRef::native() const { return impl().native(); }

Stream::Stream(const Device& device, stream_options options)
    : owned_(device.impl().create_stream(options)) {
  impl_ = owned_.get();
  owned_->device().observers().each([&](RuntimeObserver& o) { o.on_stream_created(*this); });
}

Stream::Stream(std::shared_ptr<detail::StreamImpl> impl) : owned_(std::move(impl)) {
  SS_EXPECTS(owned_ != nullptr, "Stream: null stream");
  impl_ = owned_.get();
  owned_->device().observers().each([&](RuntimeObserver& o) { o.on_stream_created(*this); });
}

Stream::~Stream() { release(); }

void Stream::release() noexcept {
  if (!owned_) return;
  const auto id = owned_->id();
  auto device = owned_->device_handle();
  device->observers().step([&] { owned_.reset(); }, [&](RuntimeObserver& o) { o.on_stream_destroyed(id); });
}

Stream::Stream(Stream&& other) noexcept : owned_(std::move(other.owned_)) {
  impl_ = owned_.get();
  other.impl_ = nullptr;
}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this == &other) return *this;
  release();
  owned_ = std::move(other.owned_);
  impl_ = owned_.get();
  other.impl_ = nullptr;
  return *this;
}

}  // namespace streamsafe
