// The hazard engine on a live device: follows every record, wait and sync of the device's
// streams (through a RuntimeObserver), checks each tracked op before it is enqueued, and, with
// `enforce`, inserts the waits, host syncs and record_streams the program forgot, so it is
// correct by construction.
//
//   hazard::tracker hazards(device);                    // policy from STREAMSAFE_HAZARDS
//   hazards.on(compute).reads(in, n).writes(out, n).launch(normalize);
//   hazards.on(copy).copy(device_in, pinned_in, n);     // copies know their ranges
//   for (auto& h : hazards.hazards()) std::cerr << hazard::describe(h);
//
// Ordering: a tracked op is checked against everything the engine has seen, in the order the
// runtime performed it: each tracker call holds the device's observed order
// (runtime_observer.hpp) across its check, its insertions and its enqueue, as the runtime's own
// observed calls do across their work and callbacks. Untracked work (a raw Stream::launch) is
// invisible to the engine; records, waits, syncs and successful queries are always seen.
// Lifetime: memory named by track_alloc (or by the allocator integration) gets lifetimes; other
// memory is simply accessed. Streams: the tracker shares ownership of every stream it has seen
// (a destroyed one until its work is seen done), so `enforce` can still act on it. A destroyed
// stream is never taken back: the runtime's later calls on it (an allocator's fence record or
// query) are told to the engine as that stream's, and hold no share of it.
// Transactions: `enforce` plans what it must insert (the engine unchanged), carries it out on
// the runtime, and only then tells the engine, checks the op, enqueues it and records it. If
// anything throws on the way (a runtime call, the record_stream action, the sink, the enqueue),
// the engine holds no more than the runtime did: insertions carried out stay, the op does not.
// Thread-safe: calls from several host threads are serialized by the device's observed order,
// then an internal lock; while a tracker is attached, so are the device's observed calls.
// Several devices (the span constructor): each call takes only its stream's device's order (a
// call without a stream, none), then the one lock; see that constructor for what changes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "streamsafe/alloc/allocator_observer.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/hazard/hazard.hpp"
#include "streamsafe/hazard/policy.hpp"
#include "streamsafe/kernel.hpp"
#include "streamsafe/runtime_observer.hpp"
#include "streamsafe/source_location.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::hazard {

class oplog_writer;
class tracker;

/// The policy named by the environment variable STREAMSAFE_HAZARDS (off, report or enforce);
/// `fallback` when unset. Throws usage_error for any other value.
[[nodiscard]] policy policy_from_environment(policy fallback = policy::report);

/// Byte ranges of one op: a few inline (no heap allocation per op), more spill to the heap.
class range_list {
 public:
  void push_back(byte_range range);
  [[nodiscard]] std::span<const byte_range> view() const noexcept {
    return count_ <= inline_.size() ? std::span<const byte_range>(inline_.data(), count_)
                                    : std::span<const byte_range>(spilled_);
  }

 private:
  std::array<byte_range, 4> inline_{};
  std::vector<byte_range> spilled_;
  std::size_t count_ = 0;
};

/// One op being described before it is enqueued: name its ranges, then launch, copy or fill.
/// Obtained from tracker::on(); use it at once (it refers to the tracker and the stream).
class tracked_op {
 public:
  tracked_op& reads(const void* ptr, std::size_t bytes);
  tracked_op& writes(const void* ptr, std::size_t bytes);
  /// Any contiguous range with data() and size_bytes(): a device_buffer, a std::span of one.
  template <typename Range>
    requires requires(const Range& range) {
      range.data();
      range.size_bytes();
    }
  tracked_op& reads(const Range& range) {
    return reads(range.data(), range.size_bytes());
  }
  template <typename Range>
    requires requires(const Range& range) {
      range.data();
      range.size_bytes();
    }
  tracked_op& writes(const Range& range) {
    return writes(range.data(), range.size_bytes());
  }
  /// Checks the op (inserting what `enforce` finds missing), then launches `work`.
  void launch(const kernel& work);
  /// A copy reads src and writes dst: no annotation needed.
  void copy(void* dst, const void* src, std::size_t bytes);
  void fill(void* dst, std::uint8_t value, std::size_t bytes);

 private:
  friend class tracker;
  tracked_op(tracker& owner, StreamRef stream, streamsafe::source_location where)
      : owner_(owner), stream_(stream), where_(where) {}
  tracker& owner_;
  StreamRef stream_;
  streamsafe::source_location where_;
  range_list reads_;
  range_list writes_;
};

class tracker {
 public:
  explicit tracker(const Device& device, policy mode = policy_from_environment());
  /// One engine over several devices of this process (the ranks of a sim group, or GPUs that
  /// read each other's memory): a stream of one device reading bytes another device's stream
  /// wrote is checked like any access, so a peer copy the host did not order after its producer
  /// is a race. The host is one agent: a stream op is ordered after whatever any thread's
  /// synchronization saw finish before it was enqueued, so a race between two ranks' host
  /// threads that happen to run in that order is not seen (the report depends on the threads'
  /// timing). A device synchronization orders that device's streams only. Each tracked op takes
  /// the observed order of its stream's device, and a call without a stream (host accesses,
  /// frees, mappings) takes none, so a rank's thread never waits for another device's calls.
  /// `report` and `off` only. Throws usage_error for `enforce` (also when it comes from
  /// STREAMSAFE_HAZARDS: acting on one device while another's calls wait for the engine could
  /// deadlock), for a deterministic sim device (it runs a rank's queued collective on the thread
  /// that waits, which may hold the engine's lock the other ranks need), for no device, or for a
  /// device given twice.
  explicit tracker(std::span<const Device> devices, policy mode = policy_from_environment());
  ~tracker();
  tracker(const tracker&) = delete;
  tracker& operator=(const tracker&) = delete;

  [[nodiscard]] policy mode() const;
  /// Each hazard is reported once per (kind, pair of call sites): a loop that repeats a bug
  /// yields one report, and memory stays bounded over a long run.
  /// Each hazard goes to `sink` when found (instead of being collected). A sink that throws
  /// makes the tracked call throw before its op is enqueued, and the op is not recorded: a
  /// retry is checked as a first attempt (the report itself is not repeated).
  void on_hazard(std::function<void(const hazard&)> sink);
  /// Turns every non-informational hazard into a usage_error carrying its report.
  void throw_on_hazard();
  [[nodiscard]] std::vector<hazard> hazards() const;
  [[nodiscard]] insertion_counts inserted() const;
  /// The model's size (for tests and benchmarks): stream slots in its clocks, and events with a
  /// recorded clock. Destroyed streams and events leave it, so both follow what is alive.
  [[nodiscard]] std::size_t stream_slots() const;
  [[nodiscard]] std::size_t events_tracked() const;
  /// Writes every op the engine sees to `log` (an op log `streamsafe check` can replay).
  void record_to(oplog_writer* log);

  /// Describes an op on `stream` (see tracked_op).
  [[nodiscard]] tracked_op on(StreamRef stream, streamsafe::source_location where = streamsafe::source_location::current());
  /// The host reads or writes host (pinned) memory: ordered against device work only by syncs.
  void host_reads(const void* ptr, std::size_t bytes, streamsafe::source_location where = streamsafe::source_location::current());
  void host_writes(const void* ptr, std::size_t bytes, streamsafe::source_location where = streamsafe::source_location::current());

  /// Lifetimes of memory from an allocator: a new allocation used first on `stream`, a free,
  /// and record_stream. An allocator integration calls these; so may a user of raw memory.
  /// track_free, under `enforce`, makes the missing record_streams (or host syncs) before the
  /// engine ends the lifetime, outside the tracker's locks (so the action may take the
  /// allocator's): call it before the block goes back to the allocator. If one throws, the
  /// block is still live for the engine, so the caller may free it again.
  void track_alloc(const void* ptr, std::size_t bytes, StreamRef stream,
                   streamsafe::source_location where = streamsafe::source_location::current());
  void track_free(const void* ptr, streamsafe::source_location where = streamsafe::source_location::current());
  void track_record_stream(const void* ptr, StreamRef stream,
                           streamsafe::source_location where = streamsafe::source_location::current());
  /// How `enforce` performs a missing record_stream(block, stream) at a free. Without one it
  /// synchronizes the host with that stream before the free, which is safe but slower. The
  /// action may throw (see track_free); it runs on the freeing thread, outside the locks.
  void set_record_stream_action(std::function<void(const void* block, StreamRef stream)> action);
  /// The physical memory behind [ptr, ptr + bytes) was given back to the device or mapped anew
  /// (engine::unmap, engine::map): what an allocator integration hears in
  /// allocator_observer::on_mapping, so that old-lifetime accesses follow the bytes to another
  /// address. Takes the device's observed order: call it with none of the tracker's locks held.
  void track_mapping(const void* ptr, std::size_t bytes, mapping_change change);

  /// A collective of `group` (an id the group's ranks share, communicator::group_id), a group of
  /// `ranks` ranks one per device, was enqueued on `stream`: call it right after the tracked op
  /// that stands for the collective's reads and writes of the rank's buffer, on the same stream.
  /// The k-th collective a device issues in a group meets every other device's k-th (every
  /// rank issues a group's collectives in the same order). A collective completes on every rank
  /// only once every rank has issued it, so when the parts of min(`ranks`, the tracker's
  /// devices) devices have arrived, each part's stream is ordered after every part's stream as
  /// it was at its part. Work a stream enqueued after its own part but before the last part
  /// arrived does not get that ordering, and a collective whose other parts are 64 collectives
  /// of the group behind the newest part is given up and orders nothing (a group whose other
  /// ranks this tracker does not see keeps no more): both can add reports, never hide one. A
  /// tracker over one device has nothing to order: the call returns at once. Throws
  /// usage_error for `ranks` 0 or, over several devices, a stream of a device not among them.
  void track_collective(StreamRef stream, std::uint64_t group, std::size_t ranks,
                        streamsafe::source_location where = streamsafe::source_location::current());

  struct state;

 private:
  friend class tracked_op;
  void submit(const tracked_op& op, std::string_view op_name, const std::function<void()>& enqueue);
  policy mode_;
  std::shared_ptr<state> state_;
  std::vector<std::shared_ptr<RuntimeObserver>> views_;  // over several devices: one per device
};

}  // namespace streamsafe::hazard
