// Allocation traces (GUIDE.md section 5) and their replay through the caching allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "streamsafe/alloc/allocator_options.hpp"
#include "streamsafe/device.hpp"

namespace streamsafe {

enum class trace_action {
  alloc,
  free_requested,
  free_completed,
  segment_alloc,
  segment_free,
  segment_map,
  segment_unmap,
  oom,
  snapshot,
};

[[nodiscard]] std::string_view to_string(trace_action action) noexcept;

struct trace_event {
  trace_action action = trace_action::alloc;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::int64_t stream = 0;
  std::size_t line = 0;  ///< 1-based line in the trace, for error messages
};

/// Parses CSV text with the header `action,addr,size,stream` (numbers in decimal, addr also
/// 0x-hex). Throws parse_error naming the 1-based line and what is wrong with it.
[[nodiscard]] std::vector<trace_event> parse_alloc_trace(std::string_view text);
/// Reads a trace file, plain or gzip'd. Throws parse_error, or streamsafe::error when unreadable.
[[nodiscard]] std::vector<trace_event> load_alloc_trace(const std::filesystem::path& file);

/// Which event frees a block in the replay.
enum class replay_free_point {
  /// free_requested: the moment the program freed it. The replayed allocator gets its own
  /// stream semantics (a same-stream free is reusable at once), so PyTorch's completion delays,
  /// an artefact of its record_stream handling, are not imposed on it.
  requested,
  /// free_completed: when PyTorch actually made the memory reusable.
  completed,
};

struct replay_result {
  std::uint64_t operations = 0;            ///< allocations + frees replayed
  std::uint64_t peak_live_bytes = 0;       ///< peak of the sum of requested sizes
  std::uint64_t peak_reserved_bytes = 0;   ///< our allocator's peak reserved
  std::uint64_t original_peak_reserved_bytes = 0;  ///< from the trace's segment events; 0 if none
  std::uint64_t device_allocations = 0;    ///< num_device_alloc
  double ns_per_op = 0;                    ///< host time per replayed operation
  std::size_t streams = 0;
  std::uint64_t unmatched_frees = 0;  ///< frees of addresses the trace never allocated (skipped)
  replay_free_point free_point = replay_free_point::requested;
};

/// Told now and then how many of the events a replay has gone through, and how many there are.
using replay_progress = std::function<void(std::size_t done, std::size_t total)>;

/// Replays `events` through a caching_allocator on `device` (one Stream per trace stream id).
/// Allocations still live at the end are freed; frees of addresses never allocated (the trace
/// began mid-run) are skipped and counted. Throws parse_error (with the line) for an alloc of an
/// address that is still live, out_of_memory when the device is too small. `progress`, when
/// given, is called every 65,536 events and at the end.
[[nodiscard]] replay_result replay_alloc_trace(const std::vector<trace_event>& events, const Device& device,
                                               const allocator_options& options,
                                               replay_free_point free_point = replay_free_point::requested,
                                               const replay_progress& progress = {});

}  // namespace streamsafe
