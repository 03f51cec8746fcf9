// The allocator's steady state for a workload that repeats itself (a training loop, a server
// replaying the same batch shapes): once a period of its requests has been seen twice
// (repeat_detector.hpp), every block of the period gets a fixed offset in one mapped arena,
// planned for the whole period at once (offset_planner.hpp). From then on, each request that
// matches the plan is served from its offset: no device call, no synchronization, and the arena
// is little more than the most bytes the period ever has live, where an online policy pays for
// the holes its early choices leave. A request that does not match ends the plan ("derails"):
// the pools serve everything again, and the arena goes back once its blocks are freed and the
// cache is emptied (or it serves a later plan of the same period again).
//
// The arena. The pools lend the plan their free mapped blocks first, and the period is planned
// over them (no block straddles two): when they hold it, and the pools' reserved bytes stay
// within the allocator's slack above live bytes, the plan starts without a device call. Else
// the plan may keep the runs it uses and map a range beside them for the rest, when that
// reserves no more than the slack above the period's peak or than an arena of its own would;
// failing that, the lent blocks go back, the pools' free memory goes to the device, and one
// arena is mapped for the plan (five device calls). Lent blocks go back to their pools with the
// pools' streams ordered after the plan's (event waits, no host sync); a mapped arena is
// unmapped only after the streams that used it finished.
//
// Planning on a thread (allocator_options::plan_in_background). When the pools served the
// period without a device call, the period may be planned on a thread of its own
// (planning_job.hpp) over the free memory the pools would lend at that point, while they serve on
// and each request is only checked against the period. The plan starts at the first start of a
// period after the job is done, if the pools' free memory is then exactly what it planned over;
// else it plans again (three plans at most, then the pools stay settled). When the pools still call the
// device, every period waited costs calls, so the plan is made at once on the allocating thread.
//
// Ordering. Blocks of the plan that share bytes follow each other in the period. A block's first
// use is ordered after every stream that used the bytes before, on the device: when a previous
// occupant was allocated on another stream, or recorded on one (record_stream), the new block's
// stream waits on an event recorded on that stream at the new allocation (as when a stream
// borrows another's cache). Same-stream reuse needs nothing, as in the pools.
//
// Lifetime. A freed block's bytes stay out of use until the plan's next block on them is
// allocated; the streams it was used on are kept (shared) until then.
//
// Threads. One mutex serializes the plan; while recording, or while a job plans the period, a
// thread that finds it busy skips the plan and the log starts over, the job given up
// (interleaved threads do not repeat), so the pools' per-stream locks are never waited on behind
// it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "alloc/memory_source.hpp"
#include "alloc/occupancy_tree.hpp"
#include "alloc/offset_index.hpp"
#include "alloc/offset_planner.hpp"
#include "alloc/planning_job.hpp"
#include "alloc/repeat_detector.hpp"
#include "common/prefaulted_resource.hpp"
#include "runtime/stream_impl.hpp"
#include "streamsafe/alloc/allocator_observer.hpp"
#include "streamsafe/alloc/allocator_stats.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/event_pool.hpp"

namespace streamsafe {
class allocator_observer;
}

namespace streamsafe::detail {

/// A free block of the pools, every byte mapped, lent to the plan for its arena.
struct lent_range {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
  std::shared_ptr<StreamImpl> lender;  // the pool's stream: work queued there may still use the bytes
};

/// What the plan needs from the allocator around it.
class plan_host {
 public:
  virtual ~plan_host() = default;
  /// Gives the pools' free memory back to the device (before the arena is mapped, so reserved
  /// never holds both).
  virtual void release_pool_cache() = 0;
  /// As release_pool_cache, but never waits for the pools' streams: memory whose last use is
  /// still queued leaves the books now and goes to the device from a later finish_releases.
  virtual void release_pool_cache_when_done() = 0;
  /// Gives back what release_pool_cache_when_done left waiting, where its work is done (never
  /// waits); whether some is still waiting.
  virtual bool finish_releases() noexcept = 0;
  /// The device calls the calling thread made so far: what the plan's own releases cost, told
  /// apart from the calls of threads that serve the workload meanwhile.
  [[nodiscard]] virtual std::uint64_t device_calls_on_this_thread() const = 0;
  /// Takes up to `most` of the pools' free blocks whose bytes are all mapped out of their bins,
  /// largest first, and lends them to the plan; the pools' reserved bytes keep counting them.
  /// The pools never call into the plan, so their locks may be taken under the plan's.
  [[nodiscard]] virtual std::vector<lent_range> lend_free_memory(std::size_t most) = 0;
  /// The ranges lend_free_memory(most) would lend now, in its order, none of them taken.
  [[nodiscard]] virtual std::vector<lent_range> free_memory_view(std::size_t most) = 0;
  /// Gives `range` back to its pool, the pool's stream first ordered after `users` on the
  /// device (an event wait for each; no host sync), so the pool's next use follows the plan's.
  virtual void take_back(const lent_range& range, const std::vector<StreamImpl*>& users) = 0;
  /// Whether the bytes reserved now stay within the allocator's slack above the bytes live now
  /// plus `more_live`: whether a plan over the pools' own memory keeps reserved near live.
  [[nodiscard]] virtual bool within_slack(std::size_t more_live) const = 0;
  /// The bytes the allocator's slack lets reserved stay above the bytes live now plus
  /// `more_live` (within_slack's margin).
  [[nodiscard]] virtual std::size_t slack_beside(std::size_t more_live) const = 0;
  virtual void note_reserved(std::int64_t bytes, std::int64_t segments) = 0;
  virtual void note_host_sync() = 0;
  /// Tells the allocator's observers that physical memory now backs, or no longer backs, a chunk
  /// of the arena (allocator_observer::on_mapping); never throws.
  virtual void tell_mapping(std::uintptr_t at, std::size_t bytes, mapping_change change) noexcept = 0;
  [[nodiscard]] virtual std::uint64_t device_calls() const = 0;
  /// The host synchronizations the allocator made so far (a pool moving memory makes one).
  [[nodiscard]] virtual std::uint64_t host_syncs() const = 0;
};

class iteration_plan {
 public:
  /// `plan_in_background`: a period the pools serve without device calls is planned on a thread
  /// of its own (else on the allocating thread, as every other period).
  iteration_plan(memory_source& source, EventPool& events, std::size_t granularity, plan_host& host,
                 allocator_observer* observer, bool plan_in_background);
  /// Synchronizes the streams that used the arena, then gives it back.
  ~iteration_plan();
  iteration_plan(const iteration_plan&) = delete;
  iteration_plan& operator=(const iteration_plan&) = delete;

  struct served {
    void* ptr = nullptr;         // from the arena; nullptr: the pools serve the request
    std::uint64_t sequence = 0;  // for a pool block: give it to pool_freed at its free
  };
  /// A request of `rounded` bytes (`requested` asked) on `stream`.
  [[nodiscard]] served allocate(std::size_t rounded, std::size_t requested, StreamImpl& stream);
  /// Whether `ptr` lies in the arena (then deallocate, record_stream and block_of go here).
  [[nodiscard]] bool owns(const void* ptr) const noexcept;
  /// Frees an arena block; usage_error, changing nothing, when `ptr` is not one live.
  void deallocate(void* ptr);
  /// The pool block at `ptr`, numbered `sequence` by allocate, was freed (after the pool took it
  /// back).
  void pool_freed(std::uint64_t sequence, const void* ptr);
  /// `stream` also uses the arena block at `ptr`; false when it already was known to.
  bool record_stream(void* ptr, StreamImpl& stream);
  [[nodiscard]] block_info block_of(const void* ptr) const;
  [[nodiscard]] StreamRef allocation_stream(const void* ptr) const;
  /// One range of the arena and its live blocks, for snapshots.
  struct arena_view {
    std::uintptr_t base = 0;
    std::size_t bytes = 0;
    bool lent = false;  // the pools' memory (their segments list it too), else mapped by the plan
    std::vector<block_info> live;
  };
  [[nodiscard]] std::vector<arena_view> view() const;
  /// Adds the arena's blocks and the plan's counters to `total`.
  void add_stats(allocator_stats& total) const;
  /// The arena goes back to the device when none of its blocks is live (empty_cache, the
  /// out-of-memory ladder), after synchronizing the streams that used it; the plan is dropped.
  void release_if_unused();

 private:
  enum class phase : std::uint8_t { recording, planning, settled, active, derailed };
  enum class slot_state : std::uint8_t { free, live, freeing };
  // Two cache lines: the first holds what a later block on the same bytes reads of it (its
  // state and streams) and what a free looks up, so checking a predecessor costs one line.
  struct alignas(64) planned_block {
    slot_state state = slot_state::free;
    std::uint32_t start_slot = 0;  // in starts_
    std::shared_ptr<StreamImpl> stream;                  // of the last instance
    std::vector<std::shared_ptr<StreamImpl>> recorded;   // of the last instance
    std::uintptr_t address = 0;  // where the offset lies
    std::uint64_t allocated_at = 0;  // sequence number of the live instance
    std::size_t bytes = 0;
    std::size_t requested = 0;
    std::size_t offset = 0;      // in the plan's offsets, which the arena's ranges cover in turn
    std::uint32_t first_cell = 0;  // its bytes' cells in occupancy_: [first_cell, end_cell)
    std::uint32_t end_cell = 0;
    std::uint32_t first_predecessor = 0;  // its predecessors in predecessor_ids_, once learned
    std::uint32_t predecessor_count = 0;
  };
  struct plan_book {
    std::vector<request> requests;        // one period, from phase 0
    std::vector<std::uint64_t> lifetimes;
    std::vector<std::size_t> block_at;    // for each planned alloc of the period: its block
    std::uint64_t first_sequence = 0;     // sequence number of a phase-0 request
    bool settled = false;                 // the pools made no device call in the period
  };
  /// Offsets [offset, offset + bytes) of the plan lie at [address, address + bytes).
  struct arena_range {
    std::uintptr_t address = 0;
    std::size_t bytes = 0;
    std::size_t offset = 0;
    std::shared_ptr<StreamImpl> lender;  // null: mapped by the plan
  };
  static constexpr std::size_t max_ranges = 64;
  static constexpr int max_job_attempts = 3;
  static constexpr std::size_t unplanned = ~std::size_t{0};
  /// The blocks a period plans (its allocations with a lifetime), in request order.
  struct planned_blocks {
    std::vector<cyclic_lifetime> lifetimes;
    std::vector<std::uintptr_t> addresses;  // where the pools placed each block last period
    std::vector<std::size_t> block_at;      // for each request: its block, or unplanned
  };
  /// A period's blocks and their planner, built once: the planner the decision to serve an
  /// unconfirmed period at once built serves the switch that follows it.
  struct period_planning {
    planned_blocks blocks;
    std::optional<offset_planner> planner;  // built for blocks.lifetimes when first needed
  };

  served log_alloc(std::size_t rounded, StreamImpl& stream);
  void log_free(std::uint64_t allocated_at, std::uintptr_t address);
  /// A free while active: the plan's next request, or the plan derails.
  void note_free(std::uint64_t allocated_at, std::uintptr_t address);
  served allocate_active(std::size_t rounded, std::size_t requested, StreamImpl& stream,
                         std::vector<std::shared_ptr<StreamImpl>>& waits);
  void after_period_found();
  /// Before `next` (an allocation) is served in recording, when the log's first turn has come
  /// round again (repeat_detector::turn_again_at): the turn is offered as an unconfirmed period,
  /// to begin with `next`, as serve_unconfirmed would serve it; judged once per turn, and once
  /// more after the pools called the device in it.
  void offer_turn_again(const request& next);
  /// Whether the turn beginning at request `turn` was judged by offer_turn_again, not to begin,
  /// and either the pools have made no device call since or it was judged again already: it
  /// waits to be confirmed.
  [[nodiscard]] bool waits_after_judging(std::uint64_t turn) const;
  /// The length of the period a switch may come for soon: the one being confirmed, or the turn
  /// offer_turn_again may offer; 0 when none.
  [[nodiscard]] std::uint64_t coming_switch() const noexcept;
  /// When the detector proposes a period of `length` (0: none any more): the switch's memory is
  /// faulted in while the period is confirmed (switch_scratch_), or given back.
  void prepare_switch(std::uint64_t length) noexcept;
  /// The switch's prepared memory goes back, but for what blocks_ holds of it.
  void release_switch_memory() noexcept;
  /// With a period found: whether `next` (the request about to be numbered) is its first; if
  /// so the plan starts (or the pools settle), else the period is rejected.
  [[nodiscard]] bool begin_with(const request& next);
  /// Starts the plan of `period`; `planning`, when given, was made for this period (its serve
  /// decision's), else the blocks are found and the planner built here. False, the period not
  /// taken, when it is unconfirmed and no memory holds its plan (it may be confirmed instead);
  /// else true: the plan started, or the pools settled or set the period aside.
  [[nodiscard]] bool activate(repeating_period period, std::unique_ptr<period_planning> planning = nullptr);
  /// While a job plans the period: `next`, the request about to be numbered, is the period's
  /// (the pools serve it, or, at the start of a period with the job done, the plan does) or it
  /// is not (the job is given up, and the period recorded again).
  enum class follow : std::uint8_t { pools, plan, off };
  [[nodiscard]] follow follow_period(const request& next);
  /// Plans `lifetimes` on a thread over the memory the pools would lend now; false (nothing
  /// started) when they have none to lend.
  [[nodiscard]] bool start_job(std::vector<cyclic_lifetime> lifetimes);
  /// With the job done: starts its plan if the pools lend what it planned over (true); else
  /// plans again, or after max_job_attempts lets the pools settle.
  [[nodiscard]] bool install_job();
  /// Forgets the job (its thread, if running, finishes on its own).
  void drop_job();
  /// drop_job, and the period is recorded again.
  void abandon_job();
  /// For each range ending at `ends` (in the plan's offsets): whether a block at `offsets` lies in it.
  [[nodiscard]] static std::vector<bool> ranges_used(const std::vector<std::size_t>& ends,
                                                     const std::vector<std::size_t>& offsets);
  /// `lent`, just lent and never planned in, goes back to the pools.
  void take_back_untouched(const std::vector<lent_range>& lent);
  /// The lent ranges the plan kept go back to their pools untouched (no block of it ever
  /// started there).
  void give_back_lent();
  /// The ranges of `lent` that `plan` uses become the arena, the rest go back; all go back when
  /// `plan` is null.
  void keep_used_ranges(const std::vector<lent_range>& lent, const std::vector<std::size_t>& ends,
                        const offset_plan* plan);
  /// start_plan; if that fails (out of host memory), the arena goes back before the error does.
  void start_plan_or_release(const std::vector<cyclic_lifetime>& lifetimes, const std::vector<std::size_t>& offsets,
                             plan_book book);
  /// Makes the blocks of a plan placed at `offsets` (in the arena now held) and starts serving.
  void start_plan(const std::vector<cyclic_lifetime>& lifetimes, const std::vector<std::size_t>& offsets,
                  plan_book book);
  void settle();
  /// Whether a period the pools serve without calls may be set aside instead of settling them:
  /// once per log, while the log is young enough to hold a longer loop's first turn.
  [[nodiscard]] bool may_set_aside() const noexcept;
  /// After a set-aside, once the log can no longer propose or confirm a loop from its start (or
  /// restarted): the log ends and the pools settle, as they would have at the set-aside (true
  /// then).
  bool settle_if_set_aside_aged();
  /// after_period_found; out of host memory there, the log starts again instead.
  void look_for_period();
  void restart_recording();
  /// Once a plan derailed before its period came round once: the requests it served since the
  /// period began go into the log, which goes on, so that a longer period
  /// begun before them is found without being recorded twice again; else the log starts over.
  void resume_recording();
  /// Where the plan placed the block allocated by request `allocated_at` (0: not a block of it).
  [[nodiscard]] std::uintptr_t planned_address(std::uint64_t allocated_at) const;
  [[nodiscard]] bool same_plan(const repeating_period& period) const;
  [[nodiscard]] static planned_blocks blocks_of(const repeating_period& period);
  /// How an unconfirmed period is served. When the pools moved memory while the log was kept
  /// (they will again in every turn waited): at once when they called the device again in this
  /// turn's first requests, or when it fits in no free memory of theirs within the slack (it
  /// needs an arena of its own whenever it starts); else at once only when the pools' free runs,
  /// as lent at the next request, hold its plan, and otherwise once it is confirmed (the runs may
  /// hold it then, with the bytes of the blocks it served so far).
  enum class unconfirmed_start : std::uint8_t { wait, at_once, if_runs_hold };
  [[nodiscard]] unconfirmed_start serve_unconfirmed(const repeating_period& period,
                                                    std::unique_ptr<period_planning>& planning);
  /// Whether the period fits in no free memory of the pools within the slack (see
  /// serve_unconfirmed); may throw std::bad_alloc. `planning` holds the blocks and the planner
  /// it built (none when the largest block alone decided), for the switch.
  [[nodiscard]] bool fits_no_free_memory(const repeating_period& period, std::unique_ptr<period_planning>& planning);
  /// Whether a plan of the period fits in the pools' free runs as lend_free_memory would lend
  /// them now; false when out of host memory.
  [[nodiscard]] bool fits_runs_lent_now(const repeating_period& period, std::unique_ptr<period_planning>& planning);
  /// The sizes of the pools' free runs, the bytes of the blocks an unconfirmed period served
  /// already (where they lay last turn) counted free.
  [[nodiscard]] std::vector<std::size_t> free_runs(const repeating_period& period);
  /// Where a plan over the pools' memory puts its blocks: where the pools placed them last
  /// period, when `addresses` names them and they fit (else, or_planned: where the planner says).
  enum class placement : std::uint8_t { as_placed, or_planned };
  /// Whether blocks at `addresses` lie in the pools' free memory, apart while alive together.
  [[nodiscard]] bool fits_as_placed(const std::vector<cyclic_lifetime>& lifetimes,
                                    const std::vector<std::uintptr_t>& addresses, std::uint64_t period);
  /// What a plan over the pools' memory does when reserved is over the slack: refuse, or
  /// release the pools' free memory outside the plan's ranges and hold if that is enough.
  enum class excess : std::uint8_t { refused, released };
  /// Plans `lifetimes` over memory the pools lend; false, having given it all back, when the
  /// pools cannot hold the plan within the slack (after releasing their excess, if `what_over`).
  [[nodiscard]] bool plan_in_place(const std::vector<cyclic_lifetime>& lifetimes, std::uint64_t period,
                                   const std::vector<std::uintptr_t>& addresses, placement how,
                                   std::vector<std::size_t>& offsets, std::optional<offset_planner>& planner,
                                   excess what_over = excess::refused);
  /// Releases the pools' free memory the plan's kept ranges leave; false, the ranges given back,
  /// when reserved is still over the slack for `peak_live` more bytes.
  [[nodiscard]] bool release_excess(std::size_t peak_live);
  /// Once a plan in its own arena has served a whole period, once per arena: the pools' free
  /// memory (the chunks of the blocks they served before it began) goes to the device.
  void release_pools_left_over();
  void ask_waiting_releases(std::uint64_t count);  // every release_poll_interval-th count; under mutex_
  // The host's device calls less those of the waiting releases: the workload's own, which say
  // whether the pools still move memory.
  [[nodiscard]] std::uint64_t workload_calls() const;
  // Books the calls this thread made since `calls_before` (device_calls_on_this_thread) as a
  // release's, not the workload's.
  void book_release_calls(std::uint64_t calls_before);
  /// Plans `lifetimes` in one arena mapped for them; false when the device has no room.
  [[nodiscard]] bool plan_in_new_arena(const std::vector<cyclic_lifetime>& lifetimes, std::uint64_t period,
                                       std::vector<std::size_t>& offsets, std::optional<offset_planner>& planner);
  /// `planner`, built for `lifetimes` in the switch's memory if it is not yet: one sweep over the
  /// period serves every plan of it the switch tries.
  [[nodiscard]] const offset_planner& planned(std::optional<offset_planner>& planner,
                                              const std::vector<cyclic_lifetime>& lifetimes, std::uint64_t period);
  /// Plans the planner's blocks over the pools' free runs and a range mapped beside them for what
  /// they do not hold, when that reserves no more than `most` bytes (the slack above the period's
  /// peak live bytes, or an `arena` of their own, whichever is more); false, the runs given back,
  /// when not (or the range could not be mapped).
  [[nodiscard]] bool plan_beside_runs(std::size_t most, std::size_t arena, std::vector<std::size_t>& offsets,
                                      const offset_planner& planner);
  /// With the runs the plan keeps in ranges_: the rest of the pools' cache goes back and
  /// `beside` bytes are mapped after the runs; false, the kept runs given back, when the device
  /// has no room for them (or the mapping failed).
  [[nodiscard]] bool map_beside_kept(std::size_t beside);
  /// Plans the arena's `plan` of `lifetimes` over one of the pools' runs and a new range smaller
  /// than the `arena`, when the two reserve no more than `most` bytes (as plan_beside_runs):
  /// the plan is cut at an offset no block crosses, the blocks above the cut go
  /// into the smallest run that holds them (which the pools then keep mapped, one unmap fewer)
  /// and the rest into a range mapped for them. False, the runs given back, when no run takes the
  /// top (or the range could not be mapped).
  [[nodiscard]] bool plan_top_in_a_run(const std::vector<cyclic_lifetime>& lifetimes, std::size_t most,
                                       std::size_t arena, const offset_plan& plan, std::vector<std::size_t>& offsets);
  /// Whether the device's free memory, with the pools' cache given back, may hold a new range of
  /// `bytes` (no answer from the device: true).
  [[nodiscard]] bool device_may_hold(std::size_t bytes);
  /// Maps a range of `bytes` for the plan, after the ranges it holds (offsets from span_ on).
  [[nodiscard]] bool map_arena(std::size_t bytes);
  /// The range of the arena holding `offset`, and the address there.
  [[nodiscard]] std::size_t range_at(std::size_t offset) const;
  [[nodiscard]] std::uintptr_t address_of(std::size_t offset) const;
  /// A new plan's first takings of bytes wait for the streams that lent them.
  void start_history();
  /// Adds `stream` (when not null) to the arena's earlier users, once.
  void remember_user(const std::shared_ptr<StreamImpl>& stream);
  /// Gives `r`, mapped by the plan, back to the device once `users` finished their work.
  void unmap_after(const arena_range& r, const std::vector<StreamImpl*>& users);
  /// Makes `ranges` what owns() sees (with no block of the plan live).
  void publish_ranges(const std::vector<arena_range>& ranges);
  /// Clears the plan's blocks and books (the arena already given back).
  void forget_plan();
  /// Queues the cross-stream reuses that giving `r` back to its lender makes, for tell_reuses.
  void note_reuses(const arena_range& r, const std::vector<StreamImpl*>& users);
  /// Tells the observer the queued reuses; takes the lock, so call it with the lock released.
  void tell_reuses() noexcept;
  /// Declared before a public call's lock: tells the queued reuses once the lock is released.
  struct reuses_told_after {
    explicit reuses_told_after(iteration_plan& p) noexcept : plan(p) {}
    iteration_plan& plan;
    reuses_told_after(const reuses_told_after&) = delete;
    reuses_told_after& operator=(const reuses_told_after&) = delete;
    ~reuses_told_after() { plan.tell_reuses(); }
  };
  [[nodiscard]] bool has_arena() const noexcept { return !ranges_.empty(); }
  [[nodiscard]] std::size_t arena_bytes() const noexcept;
  void release_arena();
  void derail();
  /// Once derailed and with no block live, gives memory the pools lent back to them.
  void return_lent_if_unused();
  /// Takes the bytes of block `index` for an allocation on `stream`: the streams it must wait for
  /// go to `waits`. False, changing nothing, when an earlier occupant is still live.
  [[nodiscard]] bool occupy(std::size_t index, StreamImpl& stream, std::vector<std::shared_ptr<StreamImpl>>& waits);
  /// occupy through the occupants' map, in the first period after an activation: the blocks
  /// found there become the block's predecessors, and the cells none of them held are noted in
  /// first_takings_.
  [[nodiscard]] bool occupy_tracked(std::size_t index, std::vector<std::shared_ptr<StreamImpl>>& waits,
                                    const StreamImpl& stream);
  /// At the end of the first period after an activation: each block's predecessors on the cells
  /// it took first in that period are the blocks the period left on them (the occupants' map
  /// now), added to those it found there.
  void learn_wrapped_predecessors();
  /// occupy through the block's predecessors.
  [[nodiscard]] bool occupy_known(std::size_t index, std::vector<std::shared_ptr<StreamImpl>>& waits,
                                  const StreamImpl& stream) const;
  /// Before the plan serves again from an arena whose history the occupants' map lost: every
  /// first taking of bytes waits for every stream that used the arena.
  void forget_occupants();
  /// Where each block's first byte sits in starts_: its start's rank in `index`, less the rank
  /// of its range's lowest offset, plus that range's first slot.
  struct start_slots {
    offset_index index;                   // the blocks' first offsets
    std::vector<std::size_t> first_rank;  // per range of the arena
    std::vector<std::size_t> first_slot;
  };
  /// Fills starts_ (the blocks' first bytes, by address) for blocks at `offsets`.
  [[nodiscard]] start_slots index_starts(const std::vector<std::size_t>& offsets);
  /// The edges that cut the arena's bytes into cells for occupancy_: the blocks' first bytes and
  /// the bytes past their last.
  [[nodiscard]] static offset_index cell_edges(const std::vector<cyclic_lifetime>& lifetimes,
                                               const std::vector<std::size_t>& offsets);
  /// The holder that stands for the arena's earlier users in occupancy_ and the lists.
  [[nodiscard]] std::uint32_t history_index() const noexcept { return static_cast<std::uint32_t>(blocks_.size()); }
  /// A block's slot becomes live, or free again, in the books. Caller holds mutex_.
  void occupy_slot(planned_block& b);
  void vacate(planned_block& b);
  /// The block live at `ptr`; usage_error naming `call` when none. Caller holds mutex_.
  [[nodiscard]] std::size_t live_index(const void* ptr, const char* call) const;
  /// live_index for deallocate, trying first the block whose free the plan expects next.
  [[nodiscard]] std::size_t freed_index(const void* ptr) const;
  [[nodiscard]] bool unused() const noexcept { return counters_.blocks == 0; }
  /// Whether the allocator synchronized the host since the detector's log began (a pool that
  /// moves memory makes one): pools that only grew hold still, and may keep a turn as it was.
  [[nodiscard]] bool pools_moved_memory() const { return host_.host_syncs() != syncs_at_log_start_; }
  [[nodiscard]] std::vector<StreamImpl*> arena_users() const;
  /// Orders `stream` after `waits` on the device (unlocked); on failure the block is free again.
  void order_after(void* ptr, std::size_t bytes, StreamImpl& stream, const std::vector<std::shared_ptr<StreamImpl>>& waits);
  [[nodiscard]] std::size_t expected_phase() const {
    return static_cast<std::size_t>((sequence_ + 1 - book_.first_sequence) % book_.requests.size());
  }
  [[nodiscard]] const request& expected() const { return book_.requests[expected_phase()]; }
  /// Whether another thread found the plan busy since the last look (then it starts over). A
  /// load first: the exchange, a locked instruction, only when set.
  [[nodiscard]] bool take_disturbed() noexcept {
    return disturbed_.load(std::memory_order_relaxed) && disturbed_.exchange(false, std::memory_order_relaxed);
  }

  memory_source& source_;
  EventPool& events_;
  std::size_t granularity_;
  plan_host& host_;
  allocator_observer* observer_;
  bool plan_in_background_;

  std::uint64_t syncs_at_log_start_ = 0;  // host_.host_syncs() when the detector's log began
  std::atomic<phase> phase_{phase::recording};
  std::atomic<bool> disturbed_{false};
  // The arena's ranges by address, for owns() without the lock: written only while no block of
  // the plan is live (so no pointer of a range can be in a caller's hands), the count last.
  std::array<std::atomic<std::uintptr_t>, max_ranges> range_begin_{};
  std::array<std::atomic<std::uintptr_t>, max_ranges> range_end_{};
  std::atomic<std::size_t> range_count_{0};
  std::atomic<std::uint64_t> range_generation_{0};  // odd while the ranges are written
  // Observer calls for lent memory gone home, told once the plan's lock is released (an
  // observer may read the allocator).
  struct reuse_notice {
    std::uintptr_t at = 0;
    std::size_t bytes = 0;
    stream_id from{};
    stream_id to{};
  };
  std::vector<reuse_notice> notices_;
  std::atomic<bool> notices_waiting_{false};
  std::atomic<std::uint64_t> settled_calls_{0};  // read without mutex_ by settled pools' requests
  std::uint64_t set_aside_in_log_ = 0;  // the start of the log that set a period aside (0: none)
  std::uint64_t calls_at_activation_ = 0;  // the host's device calls when the period last began

  mutable std::mutex mutex_;
  std::uint64_t sequence_ = 0;  // of the last request noted
  repeat_detector detector_;
  std::optional<repeating_period> found_;  // waits for the next request to begin it
  // Memory for the switch to a plan of the period proposed (scratch_for_ requests long), faulted
  // in ahead while the period is confirmed: the planner's temporaries, and the plan's blocks
  // (tens of megabytes on a long period, whose page faults were a large share of the switch).
  prefaulted_resource switch_scratch_;
  prefaulted_resource block_memory_;  // outlives blocks_, which keeps its storage there
  // The planning found_'s serve decision made (an unconfirmed period served at once), or null;
  // set and cleared with found_. Its planner's memory is in switch_scratch_, so it goes when
  // that does (and is declared after it, to be destroyed first).
  std::unique_ptr<period_planning> found_planning_;
  // found_ is unconfirmed and begins only if the pools' free runs hold its plan when it would
  // (the request that offered it may be a free the pools have not taken yet).
  bool found_if_runs_hold_ = false;
  std::uint64_t scratch_for_ = 0;
  // The turn come round again that offer_turn_again judged last, and the device calls the
  // workload had made when it did.
  std::uint64_t turn_judged_ = 0;
  std::uint64_t calls_when_judged_ = 0;
  bool judged_again_ = false;  // the turn judged last was judged a second time
  std::uint64_t next_prepare_at_ = 0;  // no preparation before this request
  plan_book book_;
  std::unique_ptr<planning_job> job_;  // while planning
  std::vector<lent_range> job_view_;   // what the job plans over
  int job_attempts_ = 0;
  std::vector<arena_range> ranges_;  // in offset order
  std::size_t span_ = 0;             // offsets the ranges cover
  std::pmr::vector<planned_block> blocks_{&block_memory_};
  occupancy_tree occupancy_;  // the last block on each cell; history_index(): the arena's earlier users
  // Each block is taken once per period, in period order, so from the second period after an
  // activation on, a block finds the same blocks on its bytes every time: on each of its cells,
  // the last block taken there before it in the period, or, where none was, the last one taken
  // there in the period before. Both are learned in the first period (through occupancy_): the
  // first as blocks are taken, the second at its end, from what the period left on the cells
  // each block took first (first_takings_). From the second period on they serve without the
  // tree, each block's list at [first_predecessor, first_predecessor + predecessor_count).
  std::vector<std::uint32_t> predecessor_ids_;
  // A stretch of cells a block took first in the learning period (held by nobody or by the
  // arena's earlier users, history_index(), when it did).
  struct first_taking {
    std::uint32_t block;
    std::uint32_t first_cell;
    std::uint32_t end_cell;
  };
  std::vector<first_taking> first_takings_;
  std::vector<std::uint32_t> holders_;  // scratch: the holders of the cells a block takes
  std::uint64_t taken_since_activation_ = 0;
  bool left_over_released_ = false;  // release_pools_left_over ran for this arena
  // What it released may still wait for the pools' streams: asked after every
  // release_poll_interval requests (planned, logged, or served by settled pools).
  std::atomic<bool> releases_waiting_{false};
  std::atomic<std::uint64_t> release_calls_{0};  // the device calls their asks made
  static constexpr std::uint64_t release_poll_interval = 1024;
  planned_block history_;
  // The blocks' distinct addresses, sorted, and for each the block live there (blocks live
  // together never share bytes): frees and queries find their block without a search per block.
  std::vector<std::uintptr_t> starts_;
  std::vector<std::uint32_t> live_at_;
  static constexpr std::uint32_t nobody = ~std::uint32_t{0};
  // The arena's blocks' figures, which every request served updates: on one cache line, where
  // allocator_stats spreads them over four. A planned block is active exactly while allocated,
  // so one set of figures serves both (add_stats gives them as allocator_stats).
  struct alignas(64) arena_counters {
    std::int64_t bytes = 0;
    std::int64_t bytes_peak = 0;
    std::uint64_t bytes_total = 0;
    std::int64_t requested = 0;
    std::int64_t requested_peak = 0;
    std::uint64_t requested_total = 0;
    std::uint64_t blocks_total = 0;
    std::uint32_t blocks = 0;
    std::uint32_t blocks_peak = 0;
  };
  arena_counters counters_;
  std::uint64_t cross_stream_reuses_ = 0;
  std::uint64_t activations_ = 0;
  std::uint64_t derailments_ = 0;
  std::uint64_t planned_requests_ = 0;
};

}  // namespace streamsafe::detail
