#include "streamsafe/device.hpp"

#include "common/expects.hpp"
#include "runtime/backends.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/event_pool_state.hpp"
#include "runtime/stream_impl.hpp"
#include "streamsafe/runtime_observer.hpp"

namespace streamsafe {

Device::Device(std::shared_ptr<detail::DeviceImpl> impl) : impl_(std::move(impl)) {
  SS_EXPECTS(impl_ != nullptr, "Device: null device");
}

Device Device::best(const sim_options& options) {
  return cuda_device_count() > 0 ? cuda(0) : sim(options);
}

Device Device::cuda(int ordinal) { return Device(detail::make_cuda_device(ordinal)); }

Device Device::sim(const sim_options& options) { return Device(detail::make_sim_device(options)); }

int Device::cuda_device_count() noexcept { return detail::cuda_device_count(); }

backend_kind Device::backend() const { return impl_->kind(); }
std::string Device::name() const { return impl_->name(); }
int Device::ordinal() const { return impl_->ordinal(); }

void* Device::allocate(std::size_t bytes) { return impl_->allocate_device(bytes); }
void Device::deallocate(void* ptr) { impl_->free_device(ptr); }
void* Device::allocate_pinned(std::size_t bytes) { return impl_->allocate_pinned(bytes); }
void Device::deallocate_pinned(void* ptr) { impl_->free_pinned(ptr); }
memory_info Device::memory() const { return impl_->memory(); }
void Device::synchronize() {
  impl_->observers().step([&] { impl_->synchronize(); }, [](RuntimeObserver& o) { o.on_device_synchronize(); });
}
StreamRef Device::default_stream() const { return StreamRef(&impl_->default_stream()); }
Stream Device::adopt_stream(native_stream native, stream_options options) const {
  return Stream(std::shared_ptr<detail::StreamImpl>(impl_->adopt_stream(native, options)));
}

namespace detail {

std::unique_ptr<StreamImpl> DeviceImpl::adopt_stream(native_stream, const stream_options&) {
  SS_EXPECTS(false, "Device::adopt_stream on ", name(), ": only the cuda backend has native streams");
  return nullptr;
}

EventPoolState& DeviceImpl::internal_event_pool() {
  std::lock_guard lock(internal_pool_mutex_);
  if (!internal_pool_) {
    internal_pool_ = std::make_shared<EventPoolState>(handle(device_hold::borrowed), event_timing::disabled,
                                                      device_hold::borrowed);
  }
  return *internal_pool_;
}

bool DeviceImpl::try_set_op_timing_sink(std::shared_ptr<OpTimingSink> sink) {
  std::lock_guard lock(op_timing_mutex_);
  if (op_timing_sink_) return false;
  op_timing_sink_ = std::move(sink);
  has_op_timing_sink_.store(op_timing_sink_ != nullptr, std::memory_order_relaxed);
  return true;
}

void DeviceImpl::clear_op_timing_sink(const OpTimingSink* sink) {
  std::lock_guard lock(op_timing_mutex_);
  if (op_timing_sink_.get() != sink) return;
  op_timing_sink_.reset();
  has_op_timing_sink_.store(false, std::memory_order_relaxed);
}

std::shared_ptr<OpTimingSink> DeviceImpl::op_timing_sink() const {
  if (!has_op_timing_sink_.load(std::memory_order_relaxed)) [[likely]] return nullptr;
  std::lock_guard lock(op_timing_mutex_);
  return op_timing_sink_;
}

}  // namespace detail
}  // namespace streamsafe
