#include "streamsafe/event.hpp"

#include "common/expects.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/event_impl.hpp"
#include "runtime/stream_impl.hpp"
#include "runtime/unique_id.hpp"
#include "streamsafe/runtime_observer.hpp"

namespace streamsafe {

namespace detail {

EventImpl::EventImpl(std::shared_ptr<DeviceImpl> device, event_timing timing)
    : device_(std::move(device)), id_(next_unique_id<event_id>()), timing_(timing) {}

}  // namespace detail

detail::EventImpl& EventRef::impl() const {
  SS_EXPECTS(impl_ != nullptr, "use of a moved-from Event");
  return *impl_;
}

event_id EventRef::id() const { return impl().id(); }
Device EventRef::device() const { return Device(impl().device_handle()); }
event_timing EventRef::timing() const { return impl().timing(); }

void EventRef::record(StreamRef stream) {
  auto& self = impl();
  auto& target = stream.impl();
  SS_EXPECTS(&self.device() == &target.device(), "Event::record: event ", static_cast<std::uint64_t>(self.id()),
             " is on ", self.device().name(), " but stream '", target.name(), "' is on ", target.device().name());
  self.device().observers().step([&] { self.record(target); },
                                 [&](RuntimeObserver& o) { o.on_event_record(*this, stream); });
}

void EventRef::synchronize() {
  auto& self = impl();
  self.device().observers().step([&] { self.synchronize(); },
                                 [&](RuntimeObserver& o) { o.on_event_synchronize(*this); });
}

bool EventRef::query() {
  auto& self = impl();
  return self.device().observers().step([&] { return self.query(); }, [&](RuntimeObserver& o, bool done) {
    if (done) o.on_event_query_complete(*this);
  });
}

float elapsed_ms(const EventRef& start, const EventRef& end) {
  auto& from = start.impl();
  auto& to = end.impl();
  auto describe = [](const detail::EventImpl& e) { return static_cast<std::uint64_t>(e.id()); };
  SS_EXPECTS(&from.device() == &to.device(), "elapsed_ms: events ", describe(from), " and ", describe(to),
             " are on different devices");
  SS_EXPECTS(from.timing() == event_timing::enabled && to.timing() == event_timing::enabled,
             "elapsed_ms: events ", describe(from), " and ", describe(to),
             " must both be created with event_timing::enabled");
  SS_EXPECTS(from.ever_recorded() && to.ever_recorded(), "elapsed_ms: event ",
             describe(from.ever_recorded() ? to : from), " was never recorded");
  SS_EXPECTS(from.query() && to.query(), "elapsed_ms: event ", describe(from.query() ? to : from),
             " has not completed (synchronize it first)");
  return to.elapsed_ms_since(from);
}

Event::Event(const Device& device, event_timing timing) : owned_(device.impl().create_event(timing)) {
  impl_ = owned_.get();
}

Event::~Event() { release(); }

void Event::release() noexcept {
  if (!owned_) return;
  const auto id = owned_->id();
  auto device = owned_->device_handle();
  device->observers().step([&] { owned_.reset(); }, [&](RuntimeObserver& o) { o.on_event_destroyed(id); });
}

Event::Event(Event&& other) noexcept : owned_(std::move(other.owned_)) {
  impl_ = owned_.get();
  other.impl_ = nullptr;
}

Event& Event::operator=(Event&& other) noexcept {
  if (this == &other) return *this;
  release();
  owned_ = std::move(other.owned_);
  impl_ = owned_.get();
  other.impl_ = nullptr;
  return *this;
}

}  // namespace streamsafe
