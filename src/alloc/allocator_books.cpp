#include "alloc/allocator_books.hpp"

namespace streamsafe::detail {

namespace stream_figures {

void note_allocated(allocator_stats& stats, const block& b, std::size_t requested) noexcept {
  stats.allocated_bytes.add(b.size);
  stats.active_bytes.add(b.size);
  stats.requested_bytes.add(requested);
  stats.allocation.add(1);
  stats.active.add(1);
}

void note_freed(allocator_stats& stats, const block& b) noexcept {
  stats.allocated_bytes.remove(b.size);
  stats.requested_bytes.remove(b.requested);
  stats.allocation.remove(1);
}

void note_inactive(allocator_stats& stats, std::size_t bytes) noexcept {
  stats.active_bytes.remove(bytes);
  stats.active.remove(1);
}

void add_to(allocator_stats& total, const allocator_stats& stream) noexcept {
  total.allocated_bytes.merge(stream.allocated_bytes);
  total.active_bytes.merge(stream.active_bytes);
  total.requested_bytes.merge(stream.requested_bytes);
  total.allocation.merge(stream.allocation);
  total.active.merge(stream.active);
}

void reset_peaks(allocator_stats& stats) noexcept {
  for (stat_counter* c : {&stats.allocated_bytes, &stats.active_bytes, &stats.requested_bytes, &stats.reserved_bytes,
                          &stats.allocation, &stats.active, &stats.segment}) {
    c->peak = c->current;
  }
}

}  // namespace stream_figures

void allocator_books::note_reserved(std::int64_t bytes, std::int64_t segments) {
  std::lock_guard lock(mutex_);
  auto apply = [](stat_counter& c, std::int64_t delta) {
    if (delta > 0) c.add(static_cast<std::uint64_t>(delta));
    if (delta < 0) c.remove(static_cast<std::uint64_t>(-delta));
  };
  apply(device_.reserved_bytes, bytes);
  apply(device_.segment, segments);
  if (bytes > 0) ++device_.num_device_alloc;
  if (bytes < 0) ++device_.num_device_free;
}

void allocator_books::count(device_event event) {
  std::lock_guard lock(mutex_);
  switch (event) {
    case device_event::alloc_retry: ++device_.num_alloc_retries; return;
    case device_event::out_of_memory: ++device_.num_ooms; return;
    case device_event::cross_stream_reuse: ++device_.num_cross_stream_reuses; return;
    case device_event::sync_all_streams: ++device_.num_sync_all_streams; return;
    case device_event::host_sync: ++device_.num_host_syncs; return;
  }
}

void allocator_books::fold_retired(const allocator_stats& gone) {
  std::lock_guard lock(mutex_);
  stream_figures::add_to(device_, gone);
}

void allocator_books::reset_peaks() {
  std::lock_guard lock(mutex_);
  stream_figures::reset_peaks(device_);
}

void allocator_books::reset_reserved_peak() {
  std::lock_guard lock(mutex_);
  device_.reserved_bytes.peak = device_.reserved_bytes.current;
}

allocator_stats allocator_books::figures() const {
  std::lock_guard lock(mutex_);
  return device_;
}

}  // namespace streamsafe::detail
