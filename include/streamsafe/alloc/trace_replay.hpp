// Allocation traces (GUIDE.md section 5) and their replay through the caching allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "streamsafe/alloc/allocator_options.hpp"
#include "streamsafe/alloc/allocator_stats.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/stream.hpp"

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
  /// streamsafe's extension: `stream` also uses the live block at `addr` (record_stream); size 0.
  record_stream,
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

/// What one pass over the trace cost.
struct replay_iteration {
  std::uint64_t operations = 0;           ///< allocations + frees
  std::uint64_t peak_live_bytes = 0;      ///< peak of the requested sizes live, kept ones included
  std::uint64_t peak_reserved_bytes = 0;  ///< the allocator's peak reserved during this pass
  std::uint64_t device_calls = 0;         ///< allocator_stats::device_calls, all kinds
  /// The same calls by kind (which of them map, unmap, create or release); all 0 for an
  /// allocator that counts only their sum.
  device_call_counts device_calls_by_kind;
  std::uint64_t host_syncs = 0;           ///< allocator_stats::num_host_syncs
  std::uint64_t cross_stream_reuses = 0;  ///< blocks lent to another stream
  std::uint64_t elapsed_ns = 0;           ///< host time of the pass
  /// Host time inside the allocator's calls alone (allocate, deallocate, record_stream): what
  /// the pass cost beyond the replay's own work and the busy work it launches. A
  /// synchronization inside a call counts here.
  std::uint64_t allocator_ns = 0;
  /// Of allocator_ns, about what the clock itself added: each call is timed between two clock
  /// reads, and what lies between two reads with no call between them (their mean over many,
  /// taken after the pass on the same thread) is counted once per timed call. The same for
  /// every allocator a replay drives, so allocator_ns less it compares allocators without the
  /// clock's share, which weighs most on the cheapest calls.
  std::uint64_t timer_ns = 0;
};

/// Figures of one iteration, or the mean of several (peaks: the highest).
struct replay_phase {
  std::size_t iterations = 0;  ///< how many passes these figures cover; 0: none
  double ns_per_op = 0;
  double allocator_ns_per_op = 0;  ///< replay_iteration::allocator_ns per operation
  double timer_ns_per_op = 0;      ///< replay_iteration::timer_ns per operation (in allocator_ns_per_op)
  double device_calls_per_iteration = 0;
  double host_syncs_per_iteration = 0;
  double cross_stream_reuses_per_iteration = 0;
  std::uint64_t peak_live_bytes = 0;
  std::uint64_t peak_reserved_bytes = 0;
};

struct replay_result {
  std::uint64_t operations = 0;            ///< allocations + frees replayed, every iteration
  std::uint64_t peak_live_bytes = 0;       ///< peak of the sum of requested sizes
  std::uint64_t peak_reserved_bytes = 0;   ///< our allocator's peak reserved
  std::uint64_t original_peak_reserved_bytes = 0;  ///< from the trace's segment events; 0 if none
  std::uint64_t device_allocations = 0;    ///< num_device_alloc
  double ns_per_op = 0;                    ///< host time per replayed operation
  std::size_t streams = 0;
  std::uint64_t unmatched_frees = 0;  ///< frees of addresses the trace never allocated (skipped)
  std::uint64_t record_streams = 0;   ///< record_stream events replayed, every iteration
  /// The repeat plan at the end (allocator_stats' num_plan_* and plan_arena_bytes).
  std::uint64_t plan_activations = 0;
  std::uint64_t plan_derailments = 0;
  std::uint64_t planned_allocations = 0;
  std::uint64_t plan_arena_bytes = 0;
  replay_free_point free_point = replay_free_point::requested;
  std::vector<replay_iteration> iterations;  ///< one per pass, in order
};

/// The first pass (warm-up: segments reserved, chunks mapped, kept allocations made).
[[nodiscard]] replay_phase first_iteration(const replay_result& result);
/// Passes 2..N: what every later iteration of the loop costs (iterations == 0 when N < 2).
[[nodiscard]] replay_phase steady_state(const replay_result& result);
/// Pass N alone, when N >= 2: the loop once every switch the allocator makes is behind it.
[[nodiscard]] replay_phase last_iteration(const replay_result& result);

/// Told now and then how many of the events a replay has gone through, and how many there are.
using replay_progress = std::function<void(std::size_t done, std::size_t total)>;

/// Device work a replay puts on its streams, as a training step would, so that a host
/// synchronization inside the allocator waits for it. Empty members: none of that work.
struct replay_work {
  /// After each allocation, on its stream, and after each record_stream, on the recorded stream:
  /// work that uses the block's bytes.
  std::function<void(StreamRef stream, void* ptr, std::size_t bytes)> touch;
  /// Every `step_every` operations, on the stream of the operation: a training step's compute.
  std::function<void(StreamRef stream)> step;
  std::size_t step_every = 0;
};

struct replay_loop {
  /// Passes over the trace, as a training loop runs its step: the first replays every
  /// allocation; later ones only those the trace both makes and frees (each with a fresh
  /// block), while those still live at the end of the trace (weights, optimizer state) stay
  /// from the first. 1: the trace as recorded.
  std::size_t iterations = 1;
  replay_free_point free_point = replay_free_point::requested;
  replay_work work;
  /// Called every 65,536 events and at the end of each pass, with the events of all passes.
  replay_progress progress;
};

/// Replays `events` through a caching_allocator on `device` (one Stream per trace stream id),
/// `loop.iterations` times. Allocations still live at the end are freed; frees and
/// record_streams of addresses not live (the trace began mid-run) are skipped and counted.
/// Throws parse_error (with the line) for an alloc of an address that is still live,
/// out_of_memory when the device is too small.
[[nodiscard]] replay_result replay_alloc_trace(const std::vector<trace_event>& events, const Device& device,
                                               const allocator_options& options, const replay_loop& loop = {});

/// What an allocator has counted so far, read by a replay before and after each pass. An
/// allocator that cannot count one of them leaves it 0 (its replay_target says which it counts).
struct replay_counters {
  std::uint64_t device_calls = 0;         ///< calls that get or give back device memory
  device_call_counts device_calls_by_kind;  ///< by kind, where the allocator tells them apart
  std::uint64_t device_allocations = 0;   ///< of those, the ones that get memory
  std::uint64_t host_syncs = 0;           ///< times the allocator made the host wait for the device
  std::uint64_t cross_stream_reuses = 0;  ///< blocks lent to another stream than their last
  std::uint64_t peak_reserved_bytes = 0;  ///< since the last reset_reserved_peak()
  /// streamsafe's repeat plan (allocator_stats' num_plan_* and plan_arena_bytes; 0 elsewhere).
  std::uint64_t plan_activations = 0;
  std::uint64_t plan_derailments = 0;
  std::uint64_t planned_allocations = 0;
  std::uint64_t plan_arena_bytes = 0;
};

/// The allocator a replay drives, so that one loop (the same passes, the same busy work)
/// measures streamsafe's and other allocators alike. Called from the replaying thread only.
class replay_target {
 public:
  virtual ~replay_target() = default;
  /// `bytes` > 0, usable in stream order on `stream`.
  [[nodiscard]] virtual void* allocate(std::size_t bytes, StreamRef stream) = 0;
  /// Frees a block allocate() returned; work already enqueued on its allocation stream and on
  /// each stream record_stream() named may still use it, and the target must let it finish.
  virtual void deallocate(void* ptr) = 0;
  /// `stream` also uses the live block `ptr`: its memory waits for that stream's work at the free.
  virtual void record_stream(void* ptr, StreamRef stream) = 0;
  virtual void reset_reserved_peak() = 0;
  [[nodiscard]] virtual replay_counters counters() const = 0;
};

/// A replay_target over a caching_allocator on `device` with `options`, the allocator the
/// first replay_alloc_trace overload uses. Its streams must outlive it.
[[nodiscard]] std::unique_ptr<replay_target> make_caching_replay_target(const Device& device,
                                                                        const allocator_options& options);

/// One Stream per trace stream id that allocates or is recorded on (ascending ids). Make them
/// before the target that uses them, so that the target is destroyed first.
using replay_streams = std::map<std::int64_t, Stream>;
[[nodiscard]] replay_streams make_replay_streams(const std::vector<trace_event>& events, const Device& device);

/// As above, through `target`, on `streams` (from make_replay_streams over the same events).
/// Blocks still live at the end are given back to `target` before it returns.
[[nodiscard]] replay_result replay_alloc_trace(const std::vector<trace_event>& events, const replay_streams& streams,
                                               replay_target& target, const replay_loop& loop = {});

}  // namespace streamsafe
