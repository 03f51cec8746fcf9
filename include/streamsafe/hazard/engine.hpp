// The happens-before engine (GUIDE.md section 3). Agents are the streams and the host; each has a
// vector clock. The engine is told every op a program performs, in the order the host issued
// them, and finds the accesses that are not ordered.
//
// Ordering rules, exactly:
//  - ops on one stream are ordered; host ops are ordered;
//  - an op enqueued on a stream is ordered after everything the host did or observed before;
//  - event_record(E, S) copies S's clock into E (a later record replaces it);
//  - stream_wait_event(S, E) joins E's clock into S; waiting on a never-recorded event is a no-op
//    and yields `wait_unrecorded`; a wait that adds nothing yields `redundant_wait`;
//  - event_sync / stream_sync / device_sync join E / S / every stream into the host;
//  - free(p) ends a lifetime. Its release point is the join of the host's clock, the allocation
//    stream's clock and the clocks of every stream given to record_stream(p, .), taken at the
//    free. A later alloc of those bytes on stream S is an op of S ordered after the release
//    point: S's later ops, and whatever is ordered after the alloc (a wait on an event recorded
//    on S after it), are ordered after every old access the release point covers; nothing else
//    is. A new-lifetime access ordered neither after an old access nor (when the release point
//    covers it) after the alloc is a `reuse_race`. Old accesses the host has seen finish precede
//    every later op and are forgotten at the free;
//  - touching freed bytes before they are allocated again is a `use_after_free`.
// Bytes never named by alloc have no lifetime: they are simply accessed.
//
// Each hazard is found once per pair of conflicting ops, at the later op, and reported once per
// kind, pair of call sites (labels) and pair of agents (stream slots): later finds only raise the
// reported hazard's `count`.
// Cost: an access is O(1) in the number of streams in the common case (FastTrack epochs: the
// last write is one epoch, reads are one epoch until two streams read concurrently), plus
// O(log n) in the number of distinct byte ranges tracked.
//
// Thread safety: none. One engine is driven by one thread at a time (a runtime integration
// serializes calls under its own lock, as the order of calls is the program order).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "streamsafe/hazard/hazard.hpp"
#include "streamsafe/hazard/ids.hpp"
#include "streamsafe/hazard/policy.hpp"

namespace streamsafe::hazard {

class oplog_writer;

class engine {
 public:
  explicit engine(policy mode = policy::report);
  ~engine();
  engine(engine&&) noexcept;
  engine& operator=(engine&&) noexcept;
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  [[nodiscard]] policy mode() const noexcept;
  /// Changing the policy keeps the model; switching away from `off` starts from what was seen.
  void set_mode(policy mode) noexcept;

  /// Hazards go to `sink` instead of being collected (each kind and pair of call sites and
  /// agents once). The sink may throw: it is called while an access is checked, before it is
  /// recorded, so the exception leaves the model as if the access had not been made (insertions
  /// already applied stay: they were performed).
  void on_hazard(std::function<void(const hazard&)> sink);
  /// The hazards collected so far (empty while a sink is set).
  [[nodiscard]] const std::vector<hazard>& hazards() const noexcept;
  [[nodiscard]] const insertion_counts& inserted() const noexcept;

  /// Every call below is also written to `log` (null: stop recording). `log` must outlive the
  /// engine or be detached first.
  void record_to(oplog_writer* log) noexcept;

  /// Interns an (op name, source location) pair. The same pair gives the same id; call it once
  /// per call site, not per op.
  [[nodiscard]] label_id label(std::string_view op_name, std::string_view loc = {});
  /// Names a stream in reports ("stream 3" until named).
  void name_stream(stream_id stream, std::string_view name);

  /// A new lifetime for [ptr, ptr + size), made on `stream`. Throws usage_error if it overlaps a
  /// live allocation or is empty.
  void alloc(std::uint64_t ptr, std::uint64_t size, stream_id stream, op_site site);
  // enforce as a transaction, for an integration that carries insertions out on a runtime:
  // plan (const: what is missing, the model unchanged), act on the runtime, then apply what
  // was performed, check (report) and commit (record). If acting throws, nothing is in the
  // model; if the sink throws, the op is not recorded. Between plan and apply the caller must
  // keep other calls out (or accept that apply joins the clocks as they are at apply). Under
  // report and off the plans are empty. The one-call forms below do all steps in order.

  /// The record_stream calls `enforce` finds missing for freeing `ptr` (one per stream whose
  /// accesses the release point does not cover). Throws usage_error unless `ptr` starts a live
  /// allocation. Changes nothing.
  [[nodiscard]] std::vector<insertion> plan_free(std::uint64_t ptr) const;
  /// The waits (`stream` on each producer) `enforce` finds missing for this access; for the
  /// host, host syncs. Changes nothing.
  [[nodiscard]] std::vector<insertion> plan_access(stream_id stream, std::span<const byte_range> reads,
                                                   std::span<const byte_range> writes) const;
  [[nodiscard]] std::vector<insertion> plan_host_access(std::span<const byte_range> reads,
                                                        std::span<const byte_range> writes) const;
  /// Applies insertions that were carried out (from a plan): waits and host syncs join the
  /// producer's clock as it is now; record_streams join the live allocation's release point. A
  /// producer the model no longer has (destroyed, its work seen finished) adds nothing. Counted
  /// in inserted().
  void apply(std::span<const insertion> performed);
  /// Reports the hazards of the access as the model stands (after apply); records nothing.
  void check_access(stream_id stream, std::span<const byte_range> reads, std::span<const byte_range> writes,
                    op_site site);
  void check_host_access(std::span<const byte_range> reads, std::span<const byte_range> writes, op_site site);
  /// Records the access, once it was performed: reports nothing, inserts nothing.
  void commit_access(stream_id stream, std::span<const byte_range> reads, std::span<const byte_range> writes,
                     op_site site);
  void commit_host_access(std::span<const byte_range> reads, std::span<const byte_range> writes, op_site site);
  /// Ends the lifetime at `ptr` with the record_streams it has: inserts nothing. Throws
  /// usage_error unless `ptr` starts a live allocation.
  void commit_free(std::uint64_t ptr, op_site site);

  /// The host frees the allocation that starts at `ptr` (plan_free, apply, commit_free). Under
  /// `enforce`, returns the record_stream calls that were missing (applied to the model).
  /// Throws usage_error unless `ptr` starts a live allocation, the model unchanged.
  std::span<const insertion> free(std::uint64_t ptr, op_site site);
  /// Adds `stream` to the release point of the live allocation containing `ptr`. Throws
  /// usage_error unless `ptr` is inside a live allocation.
  void record_stream(std::uint64_t ptr, stream_id stream, op_site site);

  /// The allocator gave the physical memory behind [ptr, ptr + size) back to the device: one
  /// piece, a chunk or a fixed segment (allocator_observer::on_mapping). The device may hand the
  /// same bytes out again at any address, so old-lifetime accesses there that the host has not
  /// seen finish leave the address with them, for every later `map`. Live allocations in the
  /// range are left as they are.
  void unmap(std::uint64_t ptr, std::uint64_t size, op_site site);
  /// Physical memory was mapped at [ptr, ptr + size): it may hold bytes an earlier `unmap` gave
  /// back, and its bytes get their old-lifetime accesses at the same offsets within the piece,
  /// as freed bytes: a later access not ordered after one is a reuse race (see free's release
  /// point). Offsets beyond what an `unmap` gave back get nothing.
  void map(std::uint64_t ptr, std::uint64_t size, op_site site);

  /// One op on `stream` that reads `reads` and writes `writes` (a kernel, a copy): plan_access,
  /// apply, check_access, commit_access. Under `enforce`, returns the waits that were missing,
  /// applied before the access.
  std::span<const insertion> access(stream_id stream, std::span<const byte_range> reads,
                                    std::span<const byte_range> writes, op_site site);
  /// The same for the host (reads and writes of host or pinned memory); under `enforce` the
  /// missing orderings are host syncs.
  std::span<const insertion> host_access(std::span<const byte_range> reads, std::span<const byte_range> writes,
                                         op_site site);

  void event_record(event_id event, stream_id stream, op_site site);
  void stream_wait_event(stream_id stream, event_id event, op_site site);
  /// The runtime ordered `stream` after `event` by itself, not through a wait the program made
  /// (a collective's completion on every rank, tracker::track_collective): stream_wait_event's
  /// ordering, with no finding (a join that adds nothing is not the program's redundant wait).
  /// Recorded in an op log as stream_wait_event.
  void join_event(stream_id stream, event_id event, op_site site);
  void event_sync(event_id event, op_site site);
  void stream_sync(stream_id stream, op_site site);
  void device_sync(op_site site);
  /// For an engine over several devices: `stream` belongs to device `device` (a number above 0
  /// the integration chooses), for device_sync(device) below. A slot recycled for a new stream
  /// forgets the tag.
  void tag_device(stream_id stream, std::uint32_t device);
  /// The host waited for every stream tagged `device`, destroyed ones whose slots are still
  /// kept included; streams of other devices are not ordered. Recorded in an op log as a
  /// stream_sync per such stream (a replay knows a destroyed one's id as a new stream).
  void device_sync(std::uint32_t device, op_site site);

  /// The stream is gone (cudaStreamDestroy); its pending work still counts. A later op naming its
  /// id is a new stream (a native handle may be reused), so a runtime integration tells this
  /// only once no call can name the old stream any more. Its slot is recycled once the host has
  /// seen all its work finish (a sync that covers it) and no live allocation was made on or
  /// recorded with it: until then it keeps its place in every clock. Unknown ids are ignored.
  void stream_destroy(stream_id stream, op_site site);
  /// The event is gone: its recorded clock is forgotten, and a later wait on its id is a wait on
  /// a never-recorded event. Unknown ids are ignored.
  void event_destroy(event_id event, op_site site);

  /// Size of the tracked state (for tests and benchmarks): byte-range segments in the shadow.
  [[nodiscard]] std::size_t shadow_segments() const noexcept;
  /// Segments of old-lifetime accesses kept for bytes given back to the device (see unmap).
  [[nodiscard]] std::size_t unmapped_segments() const noexcept;
  /// Stream slots in use or waiting to be recycled: the length of the longest vector clock.
  [[nodiscard]] std::size_t stream_slots() const noexcept;
  /// Events with a recorded clock.
  [[nodiscard]] std::size_t events_tracked() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace streamsafe::hazard
