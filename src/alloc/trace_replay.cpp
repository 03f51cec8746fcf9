// Replays an allocation trace through a caching_allocator and measures it.
#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>

#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe {

namespace {

/// PyTorch's own peak reserved, from the segment events (0 when the trace has none).
std::uint64_t original_peak_reserved(const std::vector<trace_event>& events) {
  std::int64_t reserved = 0;
  std::int64_t peak = 0;
  for (const trace_event& e : events) {
    const auto size = static_cast<std::int64_t>(e.size);
    if (e.action == trace_action::segment_alloc || e.action == trace_action::segment_map) reserved += size;
    if (e.action == trace_action::segment_free || e.action == trace_action::segment_unmap) reserved -= size;
    peak = std::max(peak, reserved);
  }
  return static_cast<std::uint64_t>(peak);
}

/// One Stream per trace stream id, created before the allocator that uses them (and so
/// destroyed after it).
std::map<std::int64_t, Stream> make_streams(const std::vector<trace_event>& events, const Device& device) {
  std::map<std::int64_t, Stream> streams;
  for (const trace_event& e : events) {
    if (e.action != trace_action::alloc || streams.contains(e.stream)) continue;
    streams.emplace(e.stream, Stream(device, stream_options{.name = "trace stream " + std::to_string(e.stream)}));
  }
  return streams;
}

}  // namespace

replay_result replay_alloc_trace(const std::vector<trace_event>& events, const Device& device,
                                 const allocator_options& options, replay_free_point free_point,
                                 const replay_progress& progress) {
  const trace_action frees = free_point == replay_free_point::requested ? trace_action::free_requested
                                                                         : trace_action::free_completed;
  auto streams = make_streams(events, device);
  replay_result result;
  result.free_point = free_point;
  result.streams = streams.size();
  result.original_peak_reserved_bytes = original_peak_reserved(events);
  caching_allocator allocator(device, options);
  std::unordered_map<std::uint64_t, std::pair<void*, std::uint64_t>> live;  // trace addr -> ours, size
  live.reserve(1 << 16);
  std::uint64_t live_bytes = 0;

  const auto start = std::chrono::steady_clock::now();
  std::size_t done = 0;
  for (const trace_event& e : events) {
    if ((++done & 0xFFFF) == 0 && progress) progress(done, events.size());
    if (e.action == trace_action::alloc) {
      if (e.size == 0) continue;
      void* ptr = allocator.allocate(e.size, streams.at(e.stream));
      if (!live.try_emplace(e.addr, ptr, e.size).second) {
        allocator.deallocate(ptr);
        throw parse_error("allocation trace, line " + std::to_string(e.line) + ": alloc of address " +
                              std::to_string(e.addr) + ", which is still live",
                          e.line);
      }
      live_bytes += e.size;
      result.peak_live_bytes = std::max(result.peak_live_bytes, live_bytes);
      ++result.operations;
    } else if (e.action == frees) {
      const auto it = live.find(e.addr);
      if (it == live.end()) {
        ++result.unmatched_frees;  // allocated before the recording started
        continue;
      }
      allocator.deallocate(it->second.first);
      live_bytes -= it->second.second;
      live.erase(it);
      ++result.operations;
    }
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  if (progress) progress(events.size(), events.size());
  for (const auto& [addr, entry] : live) allocator.deallocate(entry.first);

  const allocator_stats stats = allocator.stats();
  result.peak_reserved_bytes = static_cast<std::uint64_t>(stats.reserved_bytes.peak);
  result.device_allocations = stats.num_device_alloc;
  result.ns_per_op = result.operations == 0
                         ? 0.0
                         : static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()) /
                               static_cast<double>(result.operations);
  return result;
}

}  // namespace streamsafe
