#include "torch_allocator.hpp"

#include <algorithm>
#include <cstdio>

#include "common/expects.hpp"

namespace streamsafe::torch_alloc {

namespace {

std::string describe(const void* ptr) { return detail::concat(ptr); }

}  // namespace

torch_allocator::device_slot::device_slot(Device device, const torch_backend& backend, const allocator_options& options)
    : streams(device, backend.adopt), allocator(device, options) {}

torch_allocator::torch_allocator(torch_backend backend)
    : backend_(std::move(backend)), options_(alloc_options_from_env()) {}

torch_allocator::~torch_allocator() = default;

void torch_allocator::configure(std::string_view conf) {
  if (conf.empty()) return;  // nothing to change, even once allocations have begun
  std::lock_guard lock(slots_mutex_);
  const bool started = std::any_of(owned_slots_.begin(), owned_slots_.end(), [](const auto& s) { return s != nullptr; });
  SS_EXPECTS(!started, "streamsafe torch allocator: options '", conf,
             "' come after the first allocation; set them before CUDA allocates (use_allocator does)");
  options_ = parse_alloc_conf(conf, options_);
}

torch_allocator::device_slot* torch_allocator::existing_slot(int device) const {
  SS_EXPECTS(device >= 0 && device < max_devices, "streamsafe torch allocator: device ", device, " out of range [0, ",
             max_devices, ")");
  return slots_[static_cast<std::size_t>(device)].load(std::memory_order_acquire);
}

torch_allocator::device_slot& torch_allocator::slot(int device) {
  if (auto* found = existing_slot(device)) [[likely]] return *found;
  std::lock_guard lock(slots_mutex_);
  auto& owned = owned_slots_[static_cast<std::size_t>(device)];
  if (!owned) {
    owned = std::make_unique<device_slot>(backend_.device(device), backend_, options_);
    slots_[static_cast<std::size_t>(device)].store(owned.get(), std::memory_order_release);
  }
  return *owned;
}

torch_allocator::device_slot& torch_allocator::slot_holding(void* ptr) {
  for (int device = 0; device < max_devices; ++device) {
    auto* found = existing_slot(device);
    if (found == nullptr) continue;
    try {
      (void)found->allocator.block_of(ptr);
      return *found;
    } catch (const usage_error&) {
      // not this device's
    }
  }
  SS_EXPECTS(false, "streamsafe torch allocator: record_stream of pointer ", ptr,
             ", which no device's allocator has live (not a storage base from this allocator, or freed)");
  return *existing_slot(0);
}

void* torch_allocator::allocate(std::size_t bytes, int device, native_stream stream) {
  drain_deferred_frees();
  auto& target = slot(device);
  SS_EXPECTS(!backend_.capturing(stream), "streamsafe torch allocator: allocation of ", bytes,
             " bytes on stream ", describe(stream), " (cuda:", device,
             ") during CUDA graph capture: streamsafe's allocator has no graph-private pool; allocate what the "
             "graph uses before capturing, or capture without use_allocator()");
  return target.allocator.allocate(bytes, target.streams.resolve(stream));
}

std::vector<native_stream> torch_allocator::take_recorded(void* ptr, native_stream allocation_stream) {
  std::vector<native_stream> streams{allocation_stream};
  if (!any_recorded_.load(std::memory_order_acquire)) return streams;
  std::lock_guard lock(recorded_mutex_);
  if (auto found = recorded_.find(ptr); found != recorded_.end()) {
    streams.insert(streams.end(), found->second.begin(), found->second.end());
    recorded_.erase(found);
  }
  return streams;
}

bool torch_allocator::any_capturing(const std::vector<native_stream>& streams) const {
  return std::any_of(streams.begin(), streams.end(), [&](native_stream s) { return backend_.capturing(s); });
}

void torch_allocator::deallocate(void* ptr, int device, native_stream stream) {
  if (ptr == nullptr) return;
  auto streams = take_recorded(ptr, stream);
  if (any_capturing(streams)) {
    // Even a plain free may record an event on its streams (a borrowed block, record_stream),
    // which a capture would take into its graph instead of running.
    std::lock_guard lock(deferred_mutex_);
    deferred_.push_back({ptr, device, std::move(streams)});
    deferred_count_.fetch_add(1, std::memory_order_release);
    return;
  }
  slot(device).allocator.deallocate(ptr);
  drain_deferred_frees();
}

void torch_allocator::drain_deferred_frees() {
  if (deferred_count_.load(std::memory_order_acquire) == 0) [[likely]] return;
  std::vector<deferred_free> ready;
  {
    std::lock_guard lock(deferred_mutex_);
    auto still = std::stable_partition(deferred_.begin(), deferred_.end(),
                                       [&](const deferred_free& f) { return any_capturing(f.streams); });
    ready.assign(std::make_move_iterator(still), std::make_move_iterator(deferred_.end()));
    deferred_.erase(still, deferred_.end());
    deferred_count_.store(deferred_.size(), std::memory_order_release);
  }
  // The allocator heard each record_stream when it was made; only the free waited.
  for (const auto& free : ready) slot(free.device).allocator.deallocate(free.ptr);
}

void torch_allocator::record_stream(void* ptr, native_stream stream) {
  auto& target = slot_holding(ptr);
  target.allocator.record_stream(ptr, target.streams.resolve(stream));
  std::lock_guard lock(recorded_mutex_);
  auto& streams = recorded_[ptr];
  if (std::find(streams.begin(), streams.end(), stream) == streams.end()) streams.push_back(stream);
  any_recorded_.store(true, std::memory_order_release);
}

void torch_allocator::empty_cache() {
  drain_deferred_frees();
  for (int device = 0; device < max_devices; ++device) {
    if (auto* found = existing_slot(device)) found->allocator.empty_cache();
  }
}

allocator_stats torch_allocator::stats(int device) const {
  const auto* found = existing_slot(device);
  return found != nullptr ? found->allocator.stats() : allocator_stats{};
}

void torch_allocator::reset_peak_stats(int device) {
  if (auto* found = existing_slot(device)) found->allocator.reset_peak_stats();
}

std::size_t torch_allocator::deferred_frees() const { return deferred_count_.load(std::memory_order_acquire); }

}  // namespace streamsafe::torch_alloc
