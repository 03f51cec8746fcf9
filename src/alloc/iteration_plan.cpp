#include "alloc/iteration_plan.hpp"

#include <algorithm>
#include <exception>
#include <new>
#include <numeric>
#include <optional>
#include <span>
#include <utility>

#include "alloc/offset_planner.hpp"
#include "alloc/size_classes.hpp"
#include "alloc/stream_share.hpp"
#include "common/expects.hpp"
#include "streamsafe/alloc/allocator_observer.hpp"

namespace streamsafe::detail {

namespace {

/// A figure as allocator_stats gives it, from what it is now, its peak and all ever added.
stat_counter counter_of(std::int64_t current, std::int64_t peak, std::uint64_t total) {
  return {current, peak, total, total - static_cast<std::uint64_t>(current)};
}

void add_unique(std::vector<std::shared_ptr<StreamImpl>>& streams, const std::shared_ptr<StreamImpl>& s,
                const StreamImpl& except) {
  if (s == nullptr || s.get() == &except) return;
  if (std::none_of(streams.begin(), streams.end(), [&](const auto& have) { return have.get() == s.get(); })) {
    streams.push_back(s);
  }
}

std::vector<std::size_t> range_ends(const std::vector<lent_range>& ranges) {
  std::vector<std::size_t> ends;  // of each lent range in the plan's offsets: no block straddles one
  std::size_t total = 0;
  for (const lent_range& r : ranges) ends.push_back(total += r.bytes);
  return ends;
}

/// The blocks of a plan that end above an offset, by offset: where it may be cut above there.
class plan_cuts {
 public:
  plan_cuts(const std::vector<cyclic_lifetime>& blocks, const std::vector<std::size_t>& offsets, std::size_t above,
            std::pmr::memory_resource* scratch)
      : spans_(scratch) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < blocks.size(); ++i) count += offsets[i] + blocks[i].bytes > above ? 1 : 0;
    spans_.reserve(count);
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (offsets[i] + blocks[i].bytes > above) spans_.emplace_back(offsets[i], offsets[i] + blocks[i].bytes);
    }
    std::sort(spans_.begin(), spans_.end());
  }
  /// The lowest offset at or above `from` (not below the one given at construction) that no block
  /// crosses: each lies wholly below it or at or above it. At least the footprint when none below.
  [[nodiscard]] std::size_t lowest_from(std::size_t from) const {
    std::size_t cut = from;
    for (const auto& [offset, end] : spans_) {
      if (offset >= cut) return cut;  // every block begun below the cut ends at or below it
      cut = std::max(cut, end);
    }
    return cut;
  }

 private:
  std::pmr::vector<std::pair<std::size_t, std::size_t>> spans_;
};

/// Which of the ranges ending at `ends` (ascending) holds `offset`: ends.size() past the last.
std::size_t range_holding(const std::vector<std::size_t>& ends, std::size_t offset) {
  return static_cast<std::size_t>(std::upper_bound(ends.begin(), ends.end(), offset) - ends.begin());
}

/// The offsets, in the plan's offsets over `lent` (whose ends are `ends`), of blocks at
/// `addresses`; false when one does not lie wholly in one lent range.
bool offsets_as_placed(const std::vector<lent_range>& lent, const std::vector<std::size_t>& ends,
                       const std::vector<cyclic_lifetime>& blocks, const std::vector<std::uintptr_t>& addresses,
                       std::vector<std::size_t>& offsets) {
  std::vector<std::size_t> by_address(lent.size());
  std::iota(by_address.begin(), by_address.end(), std::size_t{0});
  std::sort(by_address.begin(), by_address.end(),
            [&lent](std::size_t x, std::size_t y) { return lent[x].address < lent[y].address; });
  offsets.resize(blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::uintptr_t at = addresses[i];
    const auto past = std::upper_bound(by_address.begin(), by_address.end(), at,
                                       [&lent](std::uintptr_t a, std::size_t r) { return a < lent[r].address; });
    if (past == by_address.begin()) return false;
    const std::size_t r = *std::prev(past);
    if (at + blocks[i].bytes > lent[r].address + lent[r].bytes) return false;
    offsets[i] = ends[r] - lent[r].bytes + (at - lent[r].address);
  }
  return true;
}

/// Whether blocks at the places the pools gave them (`offsets`, in the plan's offsets) may be
/// kept: no two alive together share a byte. The places come from one instance of the period,
/// where the pools kept blocks alive together apart, except for a block that outlives the
/// period's end: its place is from the instance before, so it may meet blocks placed after that
/// instance freed it, from its start to the period's end. Only those pairs are compared (every
/// pair once more blocks outlive the end than a scan per block pays for). Threads that make
/// requests by turns without ever finding the plan's lock taken could log a free after the next
/// allocation of its bytes; the plan's check of a block's bytes as it takes them (occupy) still
/// refuses such a place, and the plan derails.
bool places_apart(const std::vector<cyclic_lifetime>& blocks, const std::vector<std::size_t>& offsets,
                  std::uint64_t period) {
  constexpr std::size_t most_scans = 64;
  std::vector<std::size_t> outliving;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].start + blocks[i].length > period) outliving.push_back(i);
  }
  if (outliving.size() > most_scans) return disjoint_in_use(blocks, offsets, period);
  for (const std::size_t w : outliving) {
    const std::size_t begin = offsets[w];
    const std::size_t end = begin + blocks[w].bytes;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const bool alive_then = blocks[i].start + blocks[i].length > blocks[w].start;  // every block ends after 0
      const bool shares = offsets[i] < end && begin < offsets[i] + blocks[i].bytes;
      if (i != w && alive_then && shares) return false;
    }
  }
  return true;
}

/// Whether the blocks can be kept at `addresses` (none when empty) in the free memory `free`
/// (whose ends are `ends`): their offsets there go to `offsets`.
bool places_kept(const std::vector<lent_range>& free, const std::vector<std::size_t>& ends,
                 const std::vector<cyclic_lifetime>& blocks, const std::vector<std::uintptr_t>& addresses,
                 std::uint64_t period, std::vector<std::size_t>& offsets) {
  return !addresses.empty() && offsets_as_placed(free, ends, blocks, addresses, offsets) &&
         places_apart(blocks, offsets, period);
}

bool same_ranges(const std::vector<lent_range>& a, const std::vector<lent_range>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const lent_range& x, const lent_range& y) {
    return x.address == y.address && x.bytes == y.bytes && x.lender == y.lender;
  });
}

}  // namespace

iteration_plan::iteration_plan(memory_source& source, EventPool& events, std::size_t granularity, plan_host& host,
                               allocator_observer* observer, bool plan_in_background)
    : source_(source),
      events_(events),
      granularity_(granularity),
      host_(host),
      observer_(observer),
      plan_in_background_(plan_in_background) {}

iteration_plan::~iteration_plan() {
  try {
    release_arena();
  } catch (...) {
    // A failed device cannot be waited for; what could be returned was.
  }
  tell_reuses();
}

std::vector<StreamImpl*> iteration_plan::arena_users() const {
  std::vector<StreamImpl*> users;
  const auto add = [&users](const std::shared_ptr<StreamImpl>& s) {
    if (s != nullptr && std::find(users.begin(), users.end(), s.get()) == users.end()) users.push_back(s.get());
  };
  for (const planned_block& b : blocks_) {
    add(b.stream);
    for (const auto& r : b.recorded) add(r);
  }
  for (const auto& r : history_.recorded) add(r);
  return users;
}

iteration_plan::served iteration_plan::allocate(std::size_t rounded, std::size_t requested, StreamImpl& stream) {
  const reuses_told_after told{*this};
  const phase now = phase_.load(std::memory_order_acquire);
  if (now == phase::settled) {
    thread_local unsigned tick = 0;
    if ((++tick & 255u) != 0) return {};
    if (tick % release_poll_interval == 0 && releases_waiting_.load(std::memory_order_relaxed)) {
      std::lock_guard lock(mutex_);
      ask_waiting_releases(tick);
    }
    if (workload_calls() == settled_calls_.load(std::memory_order_relaxed)) return {};
    std::lock_guard lock(mutex_);
    // Looked at again under the lock: a release's calls and their booking are seen together.
    if (phase_ == phase::settled && workload_calls() != settled_calls_.load(std::memory_order_relaxed)) {
      restart_recording();  // the workload grew again: look again
    }
    return {};
  }
  if (now == phase::active) {
    thread_local std::vector<std::shared_ptr<StreamImpl>> waits;
    waits.clear();
    served out;
    {
      std::lock_guard lock(mutex_);
      out = phase_ == phase::active ? allocate_active(rounded, requested, stream, waits) : log_alloc(rounded, stream);
    }
    if (out.ptr != nullptr && !waits.empty()) order_after(out.ptr, rounded, stream, waits);
    waits.clear();
    return out;
  }
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    disturbed_.store(true, std::memory_order_relaxed);
    return {};
  }
  const request next{request_kind::alloc, rounded, stream.id(), 0};
  if (phase_ == phase::planning) {
    const follow f = follow_period(next);
    if (f == follow::pools) return {nullptr, ++sequence_};
    if (f == follow::off) return log_alloc(rounded, stream);
  } else {
    if (!found_) offer_turn_again(next);
    if (!begin_with(next)) return log_alloc(rounded, stream);
    if (phase_ == phase::recording) return log_alloc(rounded, stream);  // the period was set aside
    if (phase_ != phase::active) return {nullptr, ++sequence_};  // settled or planning: the pools serve it
  }
  // A plan that starts again over an arena it served before waits for the arena's earlier users.
  thread_local std::vector<std::shared_ptr<StreamImpl>> waits;
  waits.clear();
  const served out = allocate_active(rounded, requested, stream, waits);
  lock.unlock();
  if (out.ptr != nullptr && !waits.empty()) order_after(out.ptr, rounded, stream, waits);
  waits.clear();
  return out;
}

bool iteration_plan::begin_with(const request& next) {
  if (!found_) return false;
  repeating_period period = std::move(*found_);
  std::unique_ptr<period_planning> planning = std::move(found_planning_);
  const bool if_runs_hold = std::exchange(found_if_runs_hold_, false);
  found_.reset();
  if (period.requests[(sequence_ + 1 - period.first_sequence) % period.requests.size()] != next) {
    if (!period.unconfirmed) detector_.reject();  // an unconfirmed one: the detector judges it as it comes
    return false;
  }
  // Not begun, the unconfirmed period goes on being confirmed, and is offered again once it is.
  if (if_runs_hold && !fits_runs_lent_now(period, planning)) return false;
  calls_at_activation_ = workload_calls();
  if (!activate(std::move(period), std::move(planning))) return false;
  detector_.drop_period();  // the log pauses: resume_recording may go on with it
  return true;
}

iteration_plan::served iteration_plan::log_alloc(std::size_t rounded, StreamImpl& stream) {
  if (take_disturbed()) detector_.restart();
  const std::uint64_t sequence = ++sequence_;
  ask_waiting_releases(sequence);  // a plan derailed before they went back
  if (!detector_.continues_at(sequence)) [[unlikely]] syncs_at_log_start_ = host_.host_syncs();
  detector_.note_alloc(sequence, rounded, stream.id(), workload_calls());
  look_for_period();
  return {nullptr, sequence};
}

void iteration_plan::log_free(std::uint64_t allocated_at, std::uintptr_t address) {
  if (take_disturbed()) detector_.restart();
  if (!detector_.continues_at(sequence_ + 1)) [[unlikely]] syncs_at_log_start_ = host_.host_syncs();
  ++sequence_;
  ask_waiting_releases(sequence_);
  detector_.note_free(sequence_, allocated_at, workload_calls(), address);
  look_for_period();
}

void iteration_plan::look_for_period() {
  try {
    after_period_found();
  } catch (const std::bad_alloc&) {
    // Out of host memory copying a period out of the log: the request the pools served stands
    // (a free has taken effect), and the log starts again.
    restart_recording();
  }
}

void iteration_plan::restart_recording() {
  detector_.restart();
  found_.reset();
  found_planning_.reset();
  found_if_runs_hold_ = false;
  phase_.store(phase::recording, std::memory_order_release);
}

std::uintptr_t iteration_plan::planned_address(std::uint64_t allocated_at) const {
  if (allocated_at < book_.first_sequence || blocks_.empty()) return 0;
  const std::size_t index = book_.block_at[(allocated_at - book_.first_sequence) % book_.requests.size()];
  return index == unplanned ? 0 : blocks_[index].address;
}

void iteration_plan::resume_recording() {
  const std::uint64_t first = book_.first_sequence;
  if (book_.requests.empty() || !detector_.continues_at(first) || sequence_ + 1 - first > book_.requests.size()) {
    restart_recording();
    return;
  }
  // Every request since the period began was the period's own, in order: logged now, as if the
  // log had never paused, each with the calls made before the plan began (so a period logged
  // across them counts the calls made while the plan served).
  const std::uint64_t calls = calls_at_activation_;
  for (std::uint64_t s = first; s <= sequence_; ++s) {
    const request& r = book_.requests[s - first];
    if (r.kind == request_kind::alloc) {
      detector_.note_alloc(s, r.bytes, r.stream, calls);
    } else {
      const std::uint64_t by = r.distance == unknown_distance ? 0 : s - r.distance;
      detector_.note_free(s, by, calls, planned_address(by));
    }
    if (detector_.take_period()) detector_.drop_period();  // it would begin with a request already served
  }
  found_.reset();
  found_planning_.reset();
  found_if_runs_hold_ = false;
  phase_.store(phase::recording, std::memory_order_release);
}

bool iteration_plan::may_set_aside() const noexcept {
  // Once per log: a log that restarted, or grew too old to hold a loop's first turn, settles.
  return detector_.from_start_findable() &&
         (set_aside_in_log_ == 0 || set_aside_in_log_ == detector_.log_start());
}

bool iteration_plan::settle_if_set_aside_aged() {
  if (set_aside_in_log_ == 0) return false;
  if (set_aside_in_log_ == detector_.log_start() && detector_.may_find_from_start()) return false;
  set_aside_in_log_ = 0;
  detector_.restart();  // the log found no loop around what it set aside: it ends
  settle();
  return true;
}

void iteration_plan::settle() {
  if (has_arena()) release_arena();  // the pools serve the workload without device calls
  settled_calls_.store(workload_calls(), std::memory_order_relaxed);
  phase_.store(phase::settled, std::memory_order_release);
}

void iteration_plan::after_period_found() {
  if (settle_if_set_aside_aged()) return;
  if (const std::uint64_t coming = coming_switch(); coming != scratch_for_) [[unlikely]] prepare_switch(coming);
  std::optional<repeating_period> unconfirmed = detector_.take_unconfirmed_period();
  // A turn offer_turn_again judged not to begin is confirmed first, unless the pools called the
  // device since.
  if (unconfirmed && waits_after_judging(unconfirmed->first_sequence)) unconfirmed.reset();
  if (unconfirmed) {
    // Served at once only when waiting could not save the arena's calls (serve_unconfirmed):
    // else the period is confirmed first, and the pools may still hold it.
    std::unique_ptr<period_planning> planning;
    if (const unconfirmed_start start = unused() ? serve_unconfirmed(*unconfirmed, planning) : unconfirmed_start::wait;
        start != unconfirmed_start::wait) {
      found_ = std::move(unconfirmed);
      found_planning_ = std::move(planning);
      found_if_runs_hold_ = start == unconfirmed_start::if_runs_hold;
      return;
    }
  }
  std::optional<repeating_period> period = detector_.take_period();
  if (!period) return;
  if (!unused()) {  // a plan needs its arena free
    detector_.reject();
    return;
  }
  found_ = std::move(period);
  found_planning_.reset();
  found_if_runs_hold_ = false;
}

void iteration_plan::offer_turn_again(const request& next) {
  // Only where the pools moved memory while the log was kept (they may again in every turn
  // confirmed).
  const std::uint64_t turn = detector_.turn_again_at(next);
  if (turn == 0 || !unused() || !pools_moved_memory() || waits_after_judging(turn)) return;
  // Judged again once at most (waits_after_judging): a turn that could not begin when the
  // pools called the device (no room for its arena) waits for its confirmation, rather than
  // being copied and planned again at every call.
  judged_again_ = turn == turn_judged_;
  turn_judged_ = turn;
  calls_when_judged_ = workload_calls();
  try {
    repeating_period period = detector_.take_turn_again(turn);
    std::unique_ptr<period_planning> planning;
    const unconfirmed_start start = serve_unconfirmed(period, planning);
    if (start == unconfirmed_start::wait) return;
    found_ = std::move(period);
    found_planning_ = std::move(planning);
    found_if_runs_hold_ = start == unconfirmed_start::if_runs_hold;
  } catch (const std::bad_alloc&) {
    found_.reset();  // out of host memory copying the turn: the log goes on
    found_planning_.reset();
  }
}

std::uint64_t iteration_plan::coming_switch() const noexcept {
  if (const std::uint64_t proposed = detector_.proposed_length(); proposed != 0) return proposed;
  // A turn offer_turn_again may be offered: its switch may come at the next request.
  const std::uint64_t turn = detector_.turn_again_length();
  return turn != 0 && unused() && pools_moved_memory() ? turn : 0;
}

bool iteration_plan::waits_after_judging(std::uint64_t turn) const {
  return turn == turn_judged_ && (judged_again_ || workload_calls() == calls_when_judged_);
}

void iteration_plan::prepare_switch(std::uint64_t length) noexcept {
  // What planning a period of inference took, per request, with room for denser lifetimes.
  constexpr std::size_t scratch_per_request = 256;
  // A shorter period's switch touches a few megabytes: not worth a helper thread per proposal.
  constexpr std::uint64_t shortest_prepared = 8192;
  scratch_for_ = length;
  release_switch_memory();  // a proposal given up, or another coming: its pages go back
  // At most one preparation per length logged, so proposals that come and go often (a workload
  // that almost repeats) cost the helper no more than a few hundred bytes per request.
  if (length < shortest_prepared || sequence_ < next_prepare_at_) return;
  next_prepare_at_ = sequence_ + length;
  switch_scratch_.prepare(length * scratch_per_request);
  // A period allocates at most every other request it lives through (each block it plans is
  // freed within it).
  block_memory_.prepare((length + 1) / 2 * sizeof(planned_block));
}

void iteration_plan::release_switch_memory() noexcept {
  found_planning_.reset();  // its planner's memory is the scratch's
  switch_scratch_.release();
  block_memory_.release();
}

bool iteration_plan::same_plan(const repeating_period& period) const {
  // An arena without blocks (a switch that failed half way) holds no plan to start again.
  return has_arena() && !blocks_.empty() && period.requests == book_.requests && period.lifetimes == book_.lifetimes;
}

bool iteration_plan::activate(repeating_period period, std::unique_ptr<period_planning> planning) {
  // The planner's temporaries live in the scratch until the switch is over.
  struct scratch_released {
    iteration_plan& plan;
    ~scratch_released() {
      plan.release_switch_memory();
      plan.scratch_for_ = 0;
    }
  } const released{*this};
  if (same_plan(period)) {  // the workload came back to the plan the arena holds
    book_.first_sequence = period.first_sequence;
    forget_occupants();
    ++activations_;
    phase_.store(phase::active, std::memory_order_release);
    return true;
  }
  if (!planning) {
    planning = std::make_unique<period_planning>();
    planning->blocks = blocks_of(period);
  }
  planned_blocks& blocks = planning->blocks;
  std::vector<cyclic_lifetime>& lifetimes = blocks.lifetimes;
  std::vector<std::uintptr_t>& addresses = blocks.addresses;
  std::vector<std::size_t>& block_at = blocks.block_at;
  if (lifetimes.empty()) {
    settle();
    return true;
  }
  if (has_arena()) release_arena();
  const std::uint64_t length = period.requests.size();
  const bool unconfirmed = period.unconfirmed;
  std::vector<std::size_t> offsets;
  std::optional<offset_planner>& planner = planning->planner;  // built once, for every plan tried below
  const bool pools_settled = period.device_calls == 0 && !period.unconfirmed;
  // A period the pools served without a device call is held where they placed it, when that is
  // in the memory they lend now: nothing to plan.
  if (!pools_settled) addresses.clear();
  plan_book book{std::move(period.requests), std::move(period.lifetimes), std::move(block_at), period.first_sequence,
                 pools_settled};
  if (pools_settled && plan_in_background_) {
    // Held where the pools placed it, the period needs no job; a look at their free memory
    // first, so a job plans over what they would lend.
    if (fits_as_placed(lifetimes, addresses, length) &&
        plan_in_place(lifetimes, length, addresses, placement::as_placed, offsets, planner)) {
      start_plan_or_release(lifetimes, offsets, std::move(book));
      return true;
    }
    book_ = std::move(book);
    if (!start_job(std::move(lifetimes))) settle();  // nothing to lend: the pools go on
    return true;
  }
  // Pools that moved memory for the period give back what a plan in theirs leaves over; pools
  // that made no call keep their cache, and settle when the plan would not fit within the slack.
  const excess what_over = pools_settled ? excess::refused : excess::released;
  if (!plan_in_place(lifetimes, length, addresses, placement::or_planned, offsets, planner, what_over) &&
      (pools_settled || !plan_in_new_arena(lifetimes, length, offsets, planner))) {
    if (pools_settled && may_set_aside()) {
      // A stretch the pools serve without device calls, inside a log that may still hold the
      // first turn of a longer loop (decode steps of one shape, inside a pass over requests):
      // settling would stop the log, and it would start again mid-loop, where the loop's own
      // first turn is not seen whole. The log goes on without that length, while it is young.
      detector_.set_aside(length);
      set_aside_in_log_ = detector_.log_start();
      phase_.store(phase::recording, std::memory_order_release);
      return true;
    }
    // No room for the arena. An unconfirmed period goes on being confirmed: at its cut the
    // pools may hold it. Else the pools go on, and a later growth looks again.
    if (unconfirmed) return false;
    settle();
    return true;
  }
  start_plan_or_release(lifetimes, offsets, std::move(book));
  return true;
}

void iteration_plan::start_plan_or_release(const std::vector<cyclic_lifetime>& lifetimes,
                                           const std::vector<std::size_t>& offsets, plan_book book) {
  try {
    start_plan(lifetimes, offsets, std::move(book));
  } catch (...) {
    // Out of host memory building the plan: its memory goes back and no half-built plan is
    // left to be started again.
    release_arena();  // and forgets the plan's books
    throw;
  }
}

void iteration_plan::start_plan(const std::vector<cyclic_lifetime>& lifetimes, const std::vector<std::size_t>& offsets,
                                plan_book book) {
  // The indexes first, from the compact offsets: then one pass over the blocks, whose records
  // (two cache lines each) are a period's worth of megabytes, builds each whole.
  const offset_index cells = cell_edges(lifetimes, offsets);
  const start_slots slots = index_starts(offsets);
  // Every start lies in a range of the arena (the callers plan within them): else a block would
  // take a neighbour's slot.
  SS_EXPECTS(starts_.size() == slots.index.size(), "iteration_plan::start_plan: ", slots.index.size() - starts_.size(),
             " of the plan's block starts lie outside the arena's ", ranges_.size(), " ranges");
  // A fresh vector, so the blocks land in the memory prepared for them, not the last plan's.
  blocks_ = std::pmr::vector<planned_block>(&block_memory_);
  blocks_.reserve(lifetimes.size());
  block_memory_.release();  // what is left of it serves no later plan
  for (std::size_t i = 0; i < lifetimes.size(); ++i) {
    const std::size_t range = range_at(offsets[i]);
    planned_block& b = blocks_.emplace_back();
    b.offset = offsets[i];
    b.bytes = lifetimes[i].bytes;
    b.address = ranges_[range].address + (offsets[i] - ranges_[range].offset);
    b.first_cell = static_cast<std::uint32_t>(cells.rank(b.offset));
    b.end_cell = static_cast<std::uint32_t>(cells.rank(b.offset + b.bytes));
    b.start_slot = static_cast<std::uint32_t>(slots.index.rank(b.offset) - slots.first_rank[range] + slots.first_slot[range]);
  }
  occupancy_.reset(cells.size() == 0 ? 0 : cells.size() - 1, occupancy_tree::nobody);
  live_at_.assign(starts_.size(), nobody);
  book_ = std::move(book);
  left_over_released_ = false;
  start_history();
  predecessor_ids_.clear();
  publish_ranges(ranges_);
  ++activations_;
  phase_.store(phase::active, std::memory_order_release);
}

iteration_plan::planned_blocks iteration_plan::blocks_of(const repeating_period& period) {
  // Sized at once: grown by doubling, a long period's lists would touch twice their pages.
  const auto planned = static_cast<std::size_t>(
      period.lifetimes.size() - std::count(period.lifetimes.begin(), period.lifetimes.end(), std::uint64_t{0}));
  planned_blocks out;
  out.lifetimes.reserve(planned);
  out.addresses.reserve(planned);
  out.block_at.assign(period.requests.size(), unplanned);
  for (std::size_t t = 0; t < period.requests.size(); ++t) {
    if (period.lifetimes[t] == 0) continue;
    out.block_at[t] = out.lifetimes.size();
    out.lifetimes.push_back({period.requests[t].bytes, t, period.lifetimes[t]});
    out.addresses.push_back(period.addresses[t]);
  }
  return out;
}

iteration_plan::unconfirmed_start iteration_plan::serve_unconfirmed(const repeating_period& period,
                                                                    std::unique_ptr<period_planning>& planning) {
  if (!pools_moved_memory()) return unconfirmed_start::wait;
  // Pools that called the device again in this turn's first requests did not keep last turn's
  // layout: every turn waited would call again, where a plan (in their runs or an arena) calls a
  // few times once.
  if (workload_calls() != period.device_calls_at_turn_start) return unconfirmed_start::at_once;
  try {
    return fits_no_free_memory(period, planning) ? unconfirmed_start::at_once : unconfirmed_start::if_runs_hold;
  } catch (const std::bad_alloc&) {
    planning.reset();
    // Out of host memory (on a free that took effect): the period waits to be confirmed.
    return unconfirmed_start::wait;
  }
}

bool iteration_plan::fits_no_free_memory(const repeating_period& period, std::unique_ptr<period_planning>& planning) {
  // A period that fits in no free memory of the pools (the bytes of the blocks it served
  // already counted free) can neither be held where the pools placed it nor planned in their
  // memory: it needs an arena of its own, and each turn waited would only move memory. Its
  // largest block fitting in no free run says so at once; else the planner says.
  std::vector<std::size_t> runs = free_runs(period);
  std::size_t largest = 0;
  for (std::size_t t = 0; t < period.requests.size(); ++t) {
    if (period.lifetimes[t] != 0) largest = std::max(largest, period.requests[t].bytes);
  }
  if (runs.empty() || largest > *std::max_element(runs.begin(), runs.end())) return true;
  std::sort(runs.begin(), runs.end(), std::greater<>());  // as the pools lend them
  std::vector<std::size_t> ends(runs.size());
  std::partial_sum(runs.begin(), runs.end(), ends.begin());
  // The planner's temporaries in the switch's prepared memory; when the period is served, the
  // switch that follows plans it with the same planner (found_planning_).
  planning = std::make_unique<period_planning>();
  planning->blocks = blocks_of(period);
  const std::vector<cyclic_lifetime>& lifetimes = planning->blocks.lifetimes;
  // Held in their memory, a plan keeps reserved within the slack above live: a footprint beyond
  // that, or beyond what they hold, cannot be held there at the confirmed cut either (the
  // blocks served so far count in both live and the period's peak: a slightly wider slack).
  // Placing stops once the footprint is past it.
  const std::size_t peak = peak_live_bytes(lifetimes, period.requests.size(), &switch_scratch_);
  const std::size_t room = std::min(ends.back(), peak + host_.slack_beside(peak));
  return peak > room || planned(planning->planner, lifetimes, period.requests.size()).plan(ends, room).footprint > room;
}

bool iteration_plan::fits_runs_lent_now(const repeating_period& period, std::unique_ptr<period_planning>& planning) {
  try {
    const std::vector<lent_range> view = host_.free_memory_view(max_ranges);
    if (view.empty()) return false;
    if (!planning) {
      planning = std::make_unique<period_planning>();
      planning->blocks = blocks_of(period);
    }
    // The switch lends these runs at once and plans over them as the planner does here; no
    // plan is below the period's peak, nor puts a block in a run smaller than it.
    const std::vector<std::size_t> ends = range_ends(view);
    const std::vector<cyclic_lifetime>& lifetimes = planning->blocks.lifetimes;
    const std::size_t largest_run =
        std::max_element(view.begin(), view.end(), [](const lent_range& x, const lent_range& y) {
          return x.bytes < y.bytes;
        })->bytes;
    const bool fits_largest = std::all_of(lifetimes.begin(), lifetimes.end(),
                                          [&](const cyclic_lifetime& b) { return b.bytes <= largest_run; });
    if (!fits_largest || peak_live_bytes(lifetimes, period.requests.size(), &switch_scratch_) > ends.back()) {
      return false;
    }
    return planned(planning->planner, lifetimes, period.requests.size())
               .plan(ends, ends.back())
               .footprint <= ends.back();
  } catch (const std::bad_alloc&) {
    return false;  // the period waits to be confirmed
  }
}

std::vector<std::size_t> iteration_plan::free_runs(const repeating_period& period) {
  // The blocks of the period's first requests, served since its start, are live in the pools;
  // if the pools hold still, they lie where they lay last turn.
  const std::uint64_t served = (sequence_ + 1 - period.first_sequence) % period.requests.size();
  std::vector<lent_range> view = host_.free_memory_view(max_ranges);
  for (std::uint64_t t = 0; t < served; ++t) {
    if (period.lifetimes[t] != 0 && period.addresses[t] != 0) {
      view.push_back({period.addresses[t], period.requests[t].bytes, nullptr});
    }
  }
  std::sort(view.begin(), view.end(), [](const lent_range& x, const lent_range& y) { return x.address < y.address; });
  std::vector<std::size_t> runs;
  std::uintptr_t run_begin = 0;
  std::uintptr_t run_end = 0;
  for (const lent_range& r : view) {
    if (runs.empty() || r.address > run_end) {  // a gap: a new run
      run_begin = r.address;
      runs.push_back(0);
    }
    run_end = std::max(run_end, r.address + r.bytes);
    runs.back() = run_end - run_begin;
  }
  return runs;
}

bool iteration_plan::fits_as_placed(const std::vector<cyclic_lifetime>& lifetimes,
                                    const std::vector<std::uintptr_t>& addresses, std::uint64_t period) {
  const std::vector<lent_range> view = host_.free_memory_view(max_ranges);
  std::vector<std::size_t> offsets;
  return places_kept(view, range_ends(view), lifetimes, addresses, period, offsets);
}

bool iteration_plan::plan_in_place(const std::vector<cyclic_lifetime>& lifetimes, std::uint64_t period,
                                   const std::vector<std::uintptr_t>& addresses, placement how,
                                   std::vector<std::size_t>& offsets, std::optional<offset_planner>& planner,
                                   excess what_over) {
  const std::vector<lent_range> lent = host_.lend_free_memory(max_ranges);
  const std::vector<std::size_t> ends = range_ends(lent);
  const std::size_t total = ends.empty() ? 0 : ends.back();
  offset_plan plan;
  bool holds = false;
  bool over_slack = false;
  std::size_t peak = 0;
  try {
    std::pmr::memory_resource* scratch = &switch_scratch_;
    if (!lent.empty()) {
      peak = peak_live_bytes(lifetimes, period, scratch);
      over_slack = !host_.within_slack(peak);
    }
    // No placement of the period is below its peak: past the lent bytes, nothing to try.
    holds = !lent.empty() && peak <= total && (!over_slack || what_over == excess::released) &&
            (places_kept(lent, ends, lifetimes, addresses, period, plan.offsets) ||
             (how == placement::or_planned &&
              (plan = planned(planner, lifetimes, period).plan(ends, total)).footprint <= total));
  } catch (...) {
    take_back_untouched(lent);
    throw;
  }
  keep_used_ranges(lent, ends, holds ? &plan : nullptr);
  if (!holds || (over_slack && !release_excess(peak))) return false;
  offsets = std::move(plan.offsets);
  return true;
}

bool iteration_plan::release_excess(std::size_t peak_live) {
  // The ranges the plan kept are lent, live in their pools: only the pools' other free memory
  // goes to the device, two calls a chunk for what the plan does not need, not for the cache.
  bool held = false;
  try {
    host_.release_pool_cache();
    held = host_.within_slack(peak_live);
  } catch (...) {
    held = false;  // the pools booked what the device took back; the plan does not start here
  }
  if (held) return true;
  give_back_lent();
  return false;
}

bool iteration_plan::device_may_hold(std::size_t bytes) {
  // The device's free memory and what giving the pools' cache back would add (the whole chunks
  // of their largest free runs): a range beyond both fails after the cache went back, and the
  // pools map it again.
  std::size_t room = 0;
  try {
    room = source_.memory().free_bytes;
  } catch (const std::exception&) {
    return true;  // no answer: the mapping itself tells
  }
  for (const lent_range& r : host_.free_memory_view(max_ranges)) {
    const std::uintptr_t first = round_up(r.address, granularity_);
    const std::uintptr_t end = (r.address + r.bytes) / granularity_ * granularity_;
    room += end > first ? end - first : 0;
  }
  return room >= bytes;
}

std::vector<bool> iteration_plan::ranges_used(const std::vector<std::size_t>& ends, const std::vector<std::size_t>& offsets) {
  std::vector<bool> used(ends.size(), false);
  for (const std::size_t offset : offsets) {
    const std::size_t in = range_holding(ends, offset);
    if (in < used.size()) used[in] = true;  // past the ends: a range the plan maps beside them
  }
  return used;
}

void iteration_plan::take_back_untouched(const std::vector<lent_range>& lent) {
  for (const lent_range& r : lent) host_.take_back(r, {});  // the plan never touched them
}

void iteration_plan::give_back_lent() {
  for (const arena_range& r : std::exchange(ranges_, {})) host_.take_back(lent_range{r.address, r.bytes, r.lender}, {});
  span_ = 0;
}

void iteration_plan::keep_used_ranges(const std::vector<lent_range>& lent, const std::vector<std::size_t>& ends,
                                      const offset_plan* plan) {
  std::vector<bool> used;
  try {
    used = plan != nullptr ? ranges_used(ends, plan->offsets) : std::vector<bool>(lent.size(), false);
  } catch (...) {
    take_back_untouched(lent);  // out of host memory: none of them kept
    throw;
  }
  for (std::size_t i = 0; i < lent.size(); ++i) {
    if (used[i]) {
      ranges_.push_back({lent[i].address, lent[i].bytes, ends[i] - lent[i].bytes, lent[i].lender});
    } else {
      host_.take_back(lent[i], {});  // the plan never touched it
    }
  }
  if (plan != nullptr) span_ = ends.empty() ? 0 : ends.back();
}

bool iteration_plan::start_job(std::vector<cyclic_lifetime> lifetimes) {
  std::vector<lent_range> view = host_.free_memory_view(max_ranges);
  if (view.empty()) return false;
  job_ = std::make_unique<planning_job>(std::move(lifetimes), book_.requests.size(), range_ends(view));
  job_view_ = std::move(view);
  phase_.store(phase::planning, std::memory_order_release);
  return true;
}

void iteration_plan::drop_job() {
  job_.reset();
  job_view_.clear();
  job_attempts_ = 0;
}

void iteration_plan::abandon_job() {
  drop_job();
  book_ = {};
  restart_recording();
}

iteration_plan::follow iteration_plan::follow_period(const request& next) {
  const std::size_t at = expected_phase();
  if (take_disturbed() || next != book_.requests[at]) {
    // Given up before the period came round once: a stretch of a longer period, taken for it
    // (as derail() judges a plan that ends so soon); not planned again.
    if (sequence_ + 1 - book_.first_sequence < book_.requests.size()) detector_.forbid(book_.requests.size());
    abandon_job();
    return follow::off;
  }
  if (at != 0 || !job_->ready()) return follow::pools;
  return install_job() ? follow::plan : follow::pools;
}

bool iteration_plan::install_job() {
  const planning_state* done = nullptr;
  try {
    done = &job_->result();
  } catch (...) {
    // The planner failed (out of host memory): the pools serve, as they did, and this length
    // is not planned again.
    detector_.forbid(book_.requests.size());
    abandon_job();
    return false;
  }
  const std::vector<lent_range> lent = host_.lend_free_memory(max_ranges);
  const std::vector<std::size_t> ends = range_ends(lent);
  const bool holds = same_ranges(lent, job_view_) && host_.within_slack(done->peak_live) &&
                     !ends.empty() && done->plan.footprint <= ends.back();
  keep_used_ranges(lent, ends, holds ? &done->plan : nullptr);
  if (holds) {
    const std::unique_ptr<planning_job> job = std::move(job_);  // keeps `done` alive
    drop_job();
    book_.first_sequence = sequence_ + 1;  // the plan's first request: phase 0, as the period's
    try {
      start_plan(done->lifetimes, done->plan.offsets, std::move(book_));
    } catch (...) {
      // Out of host memory building the blocks: the lent memory goes back untouched and the
      // pools serve this request, as they would have.
      release_arena();  // and forgets the plan's books
      restart_recording();
      return false;
    }
    return true;
  }
  // The pools' free memory moved since the job began: plan over what they hold now.
  std::vector<cyclic_lifetime> lifetimes = done->lifetimes;
  if (++job_attempts_ >= max_job_attempts || !start_job(std::move(lifetimes))) {
    drop_job();
    settle();
  }
  return false;
}

const offset_planner& iteration_plan::planned(std::optional<offset_planner>& planner,
                                              const std::vector<cyclic_lifetime>& lifetimes, std::uint64_t period) {
  if (!planner) planner.emplace(lifetimes, period, &switch_scratch_);
  return *planner;
}

bool iteration_plan::plan_in_new_arena(const std::vector<cyclic_lifetime>& lifetimes, std::uint64_t period,
                                       std::vector<std::size_t>& offsets, std::optional<offset_planner>& planner) {
  offset_plan plan = planned(planner, lifetimes, period).plan();
  const std::size_t arena = round_up(plan.footprint, granularity_);
  // Runs kept and a range mapped beside them reserve no more than the slack above the period's
  // peak, or than the arena alone would.
  const std::size_t peak = peak_live_bytes(lifetimes, period, &switch_scratch_);
  const std::size_t most = std::max(arena, peak + host_.slack_beside(peak));
  if (plan_beside_runs(most, arena, offsets, *planner)) return true;
  if (plan_top_in_a_run(lifetimes, most, arena, plan, offsets)) return true;
  if (!device_may_hold(arena)) return false;  // the pools keep their cache
  // The pools never call into the plan, so their locks may be taken under ours.
  host_.release_pool_cache();
  if (!map_arena(arena)) return false;
  offsets = std::move(plan.offsets);
  return true;
}

bool iteration_plan::plan_beside_runs(std::size_t most, std::size_t arena, std::vector<std::size_t>& offsets,
                                      const offset_planner& planner) {
  const std::vector<lent_range> lent = host_.lend_free_memory(max_ranges);
  if (lent.empty()) return false;
  std::vector<std::size_t> ends = range_ends(lent);
  const std::size_t runs = ends.back();
  offset_plan plan;
  std::size_t beside = 0;  // the bytes of the range mapped beside the runs
  bool worth = false;
  try {
    // The runs the plan uses stay mapped and only the rest of the pools' cache goes back, when
    // the kept runs and the new range reserve no more than `most`. The new range holds what the
    // runs do not, never more than the arena alone. Both only grow as blocks are placed, so
    // placing stops once past either.
    std::vector<bool> used(lent.size(), false);
    std::size_t kept = 0;
    std::size_t top = 0;
    bool past = false;
    ends.push_back(runs + arena);
    plan = planner.plan(ends, [&](std::size_t offset, std::size_t end) {
      const std::size_t r = range_holding(ends, offset);
      if (r < lent.size() && !used[r]) {
        used[r] = true;
        kept += lent[r].bytes;
      }
      top = std::max(top, end);
      beside = top > runs ? round_up(top - runs, granularity_) : 0;
      past = top > runs + arena || kept + beside > most;
      return past;
    });
    ends.pop_back();
    worth = !past;
  } catch (...) {
    take_back_untouched(lent);
    throw;
  }
  keep_used_ranges(lent, ends, worth ? &plan : nullptr);
  if (!worth || !map_beside_kept(beside)) return false;
  offsets = std::move(plan.offsets);
  return true;
}

bool iteration_plan::map_beside_kept(std::size_t beside) {
  bool mapped = false;
  try {
    if (device_may_hold(beside)) {  // else the pools keep their cache
      host_.release_pool_cache();
      mapped = beside == 0 || map_arena(beside);
    }
  } catch (...) {
    give_back_lent();
    throw;
  }
  if (!mapped) give_back_lent();
  return mapped;
}

bool iteration_plan::plan_top_in_a_run(const std::vector<cyclic_lifetime>& lifetimes, std::size_t most,
                                       std::size_t arena, const offset_plan& plan, std::vector<std::size_t>& offsets) {
  // Runs too large for the plan's top are the planner's to use (plan_beside_runs); of the rest,
  // the smallest few are tried, smallest first: the bytes a run holds above the cut are bytes
  // the new range does not map, and one run kept is one unmap fewer.
  constexpr std::size_t runs_tried = 4;
  const std::vector<lent_range> lent = host_.lend_free_memory(max_ranges);
  std::size_t kept = lent.size();
  std::size_t cut = 0;
  offset_plan split;
  std::vector<std::size_t> ends;
  try {
    ends = range_ends(lent);
    std::size_t first_tried = lent.size();  // the runs tried: [first_tried, lent.size())
    while (first_tried > 0 && lent.size() - first_tried < runs_tried && lent[first_tried - 1].bytes < plan.footprint) {
      --first_tried;
    }
    if (first_tried < lent.size()) {
      const plan_cuts cuts(lifetimes, plan.offsets, plan.footprint - lent[first_tried].bytes, &switch_scratch_);
      for (std::size_t k = lent.size(); k-- > first_tried && kept == lent.size();) {
        const std::size_t c = cuts.lowest_from(plan.footprint - lent[k].bytes);
        // A range as large as the arena alone would save no bytes for the run it keeps.
        const std::size_t beside = round_up(c, granularity_);
        if (c < plan.footprint && beside < arena && beside + lent[k].bytes <= most) {
          kept = k;
          cut = c;
        }
      }
    }
    if (kept != lent.size()) {
      // The blocks above the cut into the run kept, those below into the range mapped after the
      // runs.
      split = {plan.offsets, plan.footprint};
      for (std::size_t& offset : split.offsets) {
        offset = offset >= cut ? ends[kept] - lent[kept].bytes + (offset - cut) : ends.back() + offset;
      }
    }
  } catch (...) {
    take_back_untouched(lent);
    throw;
  }
  if (kept == lent.size()) {
    take_back_untouched(lent);
    return false;
  }
  keep_used_ranges(lent, ends, &split);
  if (!map_beside_kept(round_up(cut, granularity_))) return false;
  offsets = std::move(split.offsets);
  return true;
}

std::size_t iteration_plan::range_at(std::size_t offset) const {
  const auto past = std::upper_bound(ranges_.begin(), ranges_.end(), offset,
                                     [](std::size_t at, const arena_range& r) { return at < r.offset; });
  return static_cast<std::size_t>(past - ranges_.begin()) - 1;
}

std::uintptr_t iteration_plan::address_of(std::size_t offset) const {
  const arena_range& r = ranges_[range_at(offset)];
  return r.address + (offset - r.offset);
}

void iteration_plan::start_history() {
  // The lenders' streams may still use the lent bytes: a block's first taking waits for them.
  history_ = {};
  for (const arena_range& r : ranges_) remember_user(r.lender);
  occupancy_.reset(occupancy_.cells(), history_.recorded.empty() ? occupancy_tree::nobody : history_index());
  taken_since_activation_ = 0;
}

void iteration_plan::remember_user(const std::shared_ptr<StreamImpl>& stream) {
  const auto same = [&stream](const auto& have) { return have.get() == stream.get(); };
  if (stream != nullptr && std::none_of(history_.recorded.begin(), history_.recorded.end(), same)) {
    history_.recorded.push_back(stream);
  }
}

void iteration_plan::publish_ranges(const std::vector<arena_range>& ranges) {
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> by_address;
  for (const arena_range& r : ranges) by_address.emplace_back(r.address, r.address + r.bytes);
  std::sort(by_address.begin(), by_address.end());
  // A seqlock: a reader that saw the generation change (or odd) reads again.
  range_generation_.fetch_add(1, std::memory_order_acq_rel);
  std::atomic_thread_fence(std::memory_order_release);
  range_count_.store(by_address.size(), std::memory_order_relaxed);
  for (std::size_t i = 0; i < by_address.size(); ++i) {
    range_begin_[i].store(by_address[i].first, std::memory_order_relaxed);
    range_end_[i].store(by_address[i].second, std::memory_order_relaxed);
  }
  range_generation_.fetch_add(1, std::memory_order_release);
}

std::size_t iteration_plan::arena_bytes() const noexcept {
  std::size_t total = 0;
  for (const arena_range& r : ranges_) total += r.bytes;
  return total;
}

bool iteration_plan::map_arena(std::size_t bytes) {
  std::uintptr_t base = 0;
  try {
    base = source_.reserve(bytes);
    // One physical allocation for the whole arena: it is never unmapped in part, so the switch
    // costs four device calls (reserve, create, map, access) instead of three per chunk.
    source_.map_chunk(base, bytes);
  } catch (const std::exception&) {
    if (base != 0) source_.release(base, bytes);
    return false;
  }
  for (std::size_t offset = 0; offset < bytes; offset += granularity_) {
    host_.tell_mapping(base + offset, granularity_, mapping_change::mapped);
  }
  ranges_.push_back({base, bytes, span_, nullptr});  // after the lent ranges the plan keeps, if any
  span_ += bytes;
  host_.note_reserved(static_cast<std::int64_t>(bytes), 1);
  return true;
}

void iteration_plan::release_arena() {
  const std::vector<StreamImpl*> users = arena_users();
  publish_ranges({});
  std::vector<arena_range> ranges = std::exchange(ranges_, {});
  span_ = 0;
  // Every range goes back though one fails (a failed device): the first error is rethrown.
  std::exception_ptr failed;
  const auto attempt = [&failed](auto work) {
    try {
      work();
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  };
  for (const arena_range& r : ranges) {
    if (r.lender == nullptr) continue;
    attempt([&] { host_.take_back(lent_range{r.address, r.bytes, r.lender}, users); });
    note_reuses(r, users);
  }
  for (const arena_range& r : ranges) {
    if (r.lender == nullptr) attempt([&] { unmap_after(r, users); });
  }
  forget_plan();
  if (failed) std::rethrow_exception(failed);
}

void iteration_plan::note_reuses(const arena_range& r, const std::vector<StreamImpl*>& users) {
  if (observer_ == nullptr) return;
  for (StreamImpl* user : users) {
    if (user != r.lender.get()) notices_.push_back({r.address, r.bytes, user->id(), r.lender->id()});
  }
  if (!notices_.empty()) notices_waiting_.store(true, std::memory_order_release);
}

void iteration_plan::tell_reuses() noexcept {
  if (!notices_waiting_.load(std::memory_order_acquire)) return;
  std::vector<reuse_notice> told;
  {
    std::lock_guard lock(mutex_);
    told.swap(notices_);
    notices_waiting_.store(false, std::memory_order_relaxed);
  }
  for (const reuse_notice& n : told) {
    try {
      observer_->on_reuse(reinterpret_cast<void*>(n.at), n.bytes, n.from, n.to);
    } catch (...) {
      // An observer must not throw (allocator_observer.hpp); the bytes went home all the same.
    }
  }
}

void iteration_plan::forget_plan() {
  blocks_.clear();
  occupancy_.reset(0, occupancy_tree::nobody);
  predecessor_ids_.clear();
  first_takings_.clear();
  starts_.clear();
  live_at_.clear();
  history_ = {};
  book_ = {};
}

void iteration_plan::unmap_after(const arena_range& r, const std::vector<StreamImpl*>& users) {
  // CUDA may still read the arena: everything enqueued on the streams that used it must finish.
  for (StreamImpl* user : users) {
    StreamRef(user).synchronize();
    host_.note_host_sync();
  }
  source_.release(r.address, r.bytes);
  for (std::size_t offset = 0; offset < r.bytes; offset += granularity_) {
    host_.tell_mapping(r.address + offset, granularity_, mapping_change::unmapped);
  }
  host_.note_reserved(-static_cast<std::int64_t>(r.bytes), -1);
}

void iteration_plan::derail() {
  ++derailments_;
  // A plan of a period the pools served without calls that ends before it came round once was
  // a stretch of a longer period: not worth planning again (the pools call nothing meanwhile).
  if (book_.settled && taken_since_activation_ < blocks_.size()) detector_.forbid(book_.requests.size());
  resume_recording();
  phase_.store(phase::derailed, std::memory_order_release);
  return_lent_if_unused();
}

void iteration_plan::return_lent_if_unused() {
  // The pools serve everything again: what they lent goes home once no block of the plan is
  // live, or they would grow for the bytes they lent.
  if (phase_ != phase::derailed || !unused() || ranges_.empty() || ranges_.front().lender == nullptr) return;
  release_arena();
}

iteration_plan::served iteration_plan::allocate_active(std::size_t rounded, std::size_t requested, StreamImpl& stream,
                                                       std::vector<std::shared_ptr<StreamImpl>>& waits) {
  const std::size_t at = expected_phase();
  const request& next = book_.requests[at];
  if (next.kind != request_kind::alloc || next.bytes != rounded || next.stream != stream.id()) {
    derail();
    return log_alloc(rounded, stream);
  }
  const std::size_t index = book_.block_at[at];
  if (index == unplanned) return {nullptr, ++sequence_};
  if (!occupy(index, stream, waits)) {  // an earlier block on these bytes is still live
    derail();
    return log_alloc(rounded, stream);
  }
  if (!left_over_released_ && taken_since_activation_ == blocks_.size()) {
    release_pools_left_over();
  } else {
    ask_waiting_releases(planned_requests_);
  }
  planned_block& b = blocks_[index];
  b.allocated_at = ++sequence_;
  b.requested = requested;
  ++planned_requests_;
  occupy_slot(b);
  cross_stream_reuses_ += waits.size();
  return {reinterpret_cast<void*>(b.address), b.allocated_at};
}

void iteration_plan::ask_waiting_releases(std::uint64_t count) {
  if (count % release_poll_interval == 0 && releases_waiting_.load(std::memory_order_relaxed)) {
    const std::uint64_t before = host_.device_calls_on_this_thread();
    releases_waiting_.store(host_.finish_releases(), std::memory_order_relaxed);
    book_release_calls(before);
  }
}

void iteration_plan::book_release_calls(std::uint64_t calls_before) {
  release_calls_.fetch_add(host_.device_calls_on_this_thread() - calls_before, std::memory_order_relaxed);
}

std::uint64_t iteration_plan::workload_calls() const {
  return host_.device_calls() - release_calls_.load(std::memory_order_relaxed);
}

void iteration_plan::release_pools_left_over() {
  // A plan in an arena of its own has served a whole period: the blocks the pools served before
  // it began are freed, and the chunks that held them would stay cached beside the arena.
  left_over_released_ = true;  // once per arena: a plan started again over it finds the pools as they served
  if (std::none_of(ranges_.begin(), ranges_.end(), [](const arena_range& r) { return r.lender == nullptr; })) return;
  // Their last uses may still be queued (a training step's kernels): the chunks leave the pools'
  // books now and go to the device once that work is done, asked every release_poll_interval
  // requests, so the plan's requests never wait for the device.
  releases_waiting_.store(true, std::memory_order_relaxed);  // a release that threw part-way may have left some waiting
  const std::uint64_t before = host_.device_calls_on_this_thread();
  try {
    host_.release_pool_cache_when_done();
  } catch (...) {
    // Best effort: what could not go back stays cached in the pools, as it would have.
  }
  book_release_calls(before);
}

void iteration_plan::occupy_slot(planned_block& b) {
  b.state = slot_state::live;
  live_at_[b.start_slot] = static_cast<std::uint32_t>(&b - blocks_.data());
  arena_counters& c = counters_;
  c.bytes += static_cast<std::int64_t>(b.bytes);
  c.bytes_peak = std::max(c.bytes_peak, c.bytes);
  c.bytes_total += b.bytes;
  c.requested += static_cast<std::int64_t>(b.requested);
  c.requested_peak = std::max(c.requested_peak, c.requested);
  c.requested_total += b.requested;
  ++c.blocks_total;
  c.blocks_peak = std::max(c.blocks_peak, ++c.blocks);
}

void iteration_plan::vacate(planned_block& b) {
  b.state = slot_state::free;
  live_at_[b.start_slot] = nobody;
  counters_.bytes -= static_cast<std::int64_t>(b.bytes);
  counters_.requested -= static_cast<std::int64_t>(b.requested);
  --counters_.blocks;
}

offset_index iteration_plan::cell_edges(const std::vector<cyclic_lifetime>& lifetimes,
                                        const std::vector<std::size_t>& offsets) {
  std::vector<std::size_t> edges;  // every block's first byte and the byte past its last
  edges.reserve(2 * offsets.size());
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    edges.push_back(offsets[i]);
    edges.push_back(offsets[i] + lifetimes[i].bytes);
  }
  return offset_index(std::move(edges));
}

iteration_plan::start_slots iteration_plan::index_starts(const std::vector<std::size_t>& offsets) {
  start_slots out{offset_index(offsets), std::vector<std::size_t>(ranges_.size()), std::vector<std::size_t>(ranges_.size())};
  // Within a range, addresses follow offsets: the ranges in address order, each range's starts
  // in offset order, give every start in address order.
  std::vector<std::size_t> by_address(ranges_.size());
  std::iota(by_address.begin(), by_address.end(), std::size_t{0});
  std::sort(by_address.begin(), by_address.end(),
            [this](std::size_t x, std::size_t y) { return ranges_[x].address < ranges_[y].address; });
  starts_.clear();
  starts_.reserve(out.index.size());
  for (const std::size_t r : by_address) {
    const arena_range& range = ranges_[r];
    out.first_rank[r] = out.index.rank(range.offset);
    out.first_slot[r] = starts_.size();
    out.index.append_between(
        range.offset, range.offset + range.bytes,
        [&range](std::size_t offset) { return range.address + (offset - range.offset); }, starts_);
  }
  return out;
}

void iteration_plan::forget_occupants() {
  history_ = {};
  // Bytes a derailed plan never took may still hold a lender's work.
  for (const arena_range& r : ranges_) remember_user(r.lender);
  for (const planned_block& b : blocks_) {
    remember_user(b.stream);
    for (const auto& r : b.recorded) remember_user(r);
  }
  occupancy_.reset(occupancy_.cells(), history_index());
  taken_since_activation_ = 0;
}

bool iteration_plan::occupy(std::size_t index, StreamImpl& stream, std::vector<std::shared_ptr<StreamImpl>>& waits) {
  if (blocks_[index].state != slot_state::free) return false;
  const std::uint64_t period = blocks_.size();
  const bool known = taken_since_activation_ >= period;
  bool taken = false;
  try {
    if (taken_since_activation_ == 0) {  // the period that learns them begins
      predecessor_ids_.clear();
      first_takings_.clear();
    } else if (taken_since_activation_ == period) {
      learn_wrapped_predecessors();
    }
    taken = known ? occupy_known(index, waits, stream) : occupy_tracked(index, waits, stream);
  } catch (...) {
    // Out of host memory while listing: the tree may already name this block on cells whose
    // holders were never waited for. The plan ends (a plan starts again only over a tree
    // reset); the caller gets the error.
    derail();
    throw;
  }
  if (!taken) return false;
  ++taken_since_activation_;
  planned_block& b = blocks_[index];
  // The plan's block is on the same stream every period (else the request would not match): the
  // share held from the last one serves, without touching its count.
  if (b.stream.get() != &stream) b.stream = share_stream(stream);
  b.recorded.clear();
  return true;
}

bool iteration_plan::occupy_known(std::size_t index, std::vector<std::shared_ptr<StreamImpl>>& waits,
                                  const StreamImpl& stream) const {
  const planned_block& b = blocks_[index];
  const std::span<const std::uint32_t> before(predecessor_ids_.data() + b.first_predecessor, b.predecessor_count);
  for (const std::uint32_t p : before) {
    if (blocks_[p].state != slot_state::free) return false;
  }
  for (const std::uint32_t p : before) {
    add_unique(waits, blocks_[p].stream, stream);
    for (const auto& r : blocks_[p].recorded) add_unique(waits, r, stream);
  }
  return true;
}

bool iteration_plan::occupy_tracked(std::size_t index, std::vector<std::shared_ptr<StreamImpl>>& waits,
                                    const StreamImpl& stream) {
  planned_block& b = blocks_[index];
  const auto occupant = [this](std::uint32_t block) -> const planned_block& {
    return block == history_index() ? history_ : blocks_[block];
  };
  // One walk of the tree takes the cells and lists who held them. A taking refused (a holder
  // still live) leaves the cells named for this block: the plan derails, and every plan starts
  // again over a tree reset (start_plan, forget_occupants).
  const auto taker = static_cast<std::uint32_t>(index);
  holders_.clear();
  occupancy_.take_stretches(b.first_cell, b.end_cell, taker, [&](std::uint32_t holder, std::uint32_t first, std::uint32_t end) {
    if (holder == occupancy_tree::nobody || holder == history_index()) {
      first_takings_.push_back({taker, first, end});
    }
    if (holder != occupancy_tree::nobody) holders_.push_back(holder);
  });
  for (const std::uint32_t holder : holders_) {
    if (occupant(holder).state != slot_state::free) return false;
  }
  const auto first = static_cast<std::uint32_t>(predecessor_ids_.size());
  for (const std::uint32_t holder : holders_) {
    const planned_block& before = occupant(holder);
    add_unique(waits, before.stream, stream);
    for (const auto& r : before.recorded) add_unique(waits, r, stream);
    if (holder != history_index() &&
        std::find(predecessor_ids_.begin() + first, predecessor_ids_.end(), holder) == predecessor_ids_.end()) {
      predecessor_ids_.push_back(holder);
    }
  }
  b.first_predecessor = first;
  b.predecessor_count = static_cast<std::uint32_t>(predecessor_ids_.size()) - first;
  return true;
}

void iteration_plan::learn_wrapped_predecessors() {
  // A block's wrapped predecessors join the end of its own list, so the lists are made again,
  // block by block. The takings were noted in the order blocks were taken: block order when the
  // plan started at its period's first block, else a rotation of it. Nothing changes until every
  // list is made: out of host memory, the old lists stand.
  const auto by_block = [](const first_taking& x, const first_taking& y) { return x.block < y.block; };
  if (!std::is_sorted(first_takings_.begin(), first_takings_.end(), by_block)) {
    std::stable_sort(first_takings_.begin(), first_takings_.end(), by_block);
  }
  std::vector<std::uint32_t> lists;
  lists.reserve(predecessor_ids_.size() + first_takings_.size());
  std::vector<std::uint32_t> ends(blocks_.size());  // block i's list ends at ends[i]
  auto taking = first_takings_.begin();
  for (std::uint32_t i = 0; i < blocks_.size(); ++i) {
    const planned_block& b = blocks_[i];
    const std::size_t first = lists.size();
    lists.insert(lists.end(), predecessor_ids_.begin() + b.first_predecessor,
                 predecessor_ids_.begin() + b.first_predecessor + b.predecessor_count);
    for (; taking != first_takings_.end() && taking->block == i; ++taking) {
      occupancy_.for_each_holder(taking->first_cell, taking->end_cell, [&](std::uint32_t holder) {
        if (holder != history_index() && std::find(lists.begin() + first, lists.end(), holder) == lists.end()) {
          lists.push_back(holder);
        }
      });
    }
    ends[i] = static_cast<std::uint32_t>(lists.size());
  }
  for (std::uint32_t i = 0, first = 0; i < blocks_.size(); first = ends[i++]) {
    blocks_[i].first_predecessor = first;
    blocks_[i].predecessor_count = ends[i] - first;
  }
  predecessor_ids_ = std::move(lists);
  std::vector<first_taking>().swap(first_takings_);  // not needed again until the plan starts again
}

void iteration_plan::order_after(void* ptr, std::size_t bytes, StreamImpl& stream,
                                 const std::vector<std::shared_ptr<StreamImpl>>& waits) {
  try {
    for (const auto& earlier : waits) {
      PooledEvent done = events_.acquire();
      done.record(StreamRef(earlier.get()));
      StreamRef(&stream).wait(done);
      if (observer_ != nullptr) observer_->on_reuse(ptr, bytes, earlier->id(), stream.id());
    }
  } catch (...) {
    std::lock_guard lock(mutex_);  // the caller never gets the block: it is free again
    planned_block& b = blocks_[live_index(ptr, "allocate")];
    vacate(b);
    derail();
    throw;
  }
}

bool iteration_plan::owns(const void* ptr) const noexcept {
  const auto at = reinterpret_cast<std::uintptr_t>(ptr);
  for (;;) {
    const std::uint64_t generation = range_generation_.load(std::memory_order_acquire);
    if ((generation & 1) != 0) continue;  // being written
    std::size_t low = 0;  // then the first range beginning past `at`
    std::size_t high = std::min(range_count_.load(std::memory_order_relaxed), max_ranges);
    while (low < high) {
      const std::size_t middle = (low + high) / 2;
      if (range_begin_[middle].load(std::memory_order_relaxed) <= at) {
        low = middle + 1;
      } else {
        high = middle;
      }
    }
    const bool inside = low != 0 && at < range_end_[low - 1].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (range_generation_.load(std::memory_order_relaxed) == generation) return inside;
  }
}

std::size_t iteration_plan::live_index(const void* ptr, const char* call) const {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  const auto at = std::lower_bound(starts_.begin(), starts_.end(), address);
  if (at != starts_.end() && *at == address) {
    const std::uint32_t index = live_at_[static_cast<std::size_t>(at - starts_.begin())];
    if (index != nobody && blocks_[index].state == slot_state::live) return index;
  }
  SS_EXPECTS(false, "caching_allocator::", call, "(", ptr, "): not a live allocation of this allocator (",
             "freed already, or not the pointer allocate returned; nothing was changed)");
  return 0;
}

std::size_t iteration_plan::freed_index(const void* ptr) const {
  // Frees come in period order: the one expected names its block, found with three loads where
  // the search over every block's address takes a dependent load per halving.
  if (!book_.requests.empty()) {
    const request& next = expected();
    const std::uint64_t allocated_at = sequence_ + 1 - next.distance;
    if (next.kind == request_kind::free && next.distance <= sequence_ && allocated_at >= book_.first_sequence) {
      const std::size_t index = book_.block_at[(allocated_at - book_.first_sequence) % book_.requests.size()];
      if (index != unplanned && blocks_[index].address == reinterpret_cast<std::uintptr_t>(ptr) &&
          blocks_[index].state == slot_state::live) {
        return index;  // the block live at `ptr`: blocks live together never share an address
      }
    }
  }
  return live_index(ptr, "deallocate");
}

void iteration_plan::deallocate(void* ptr) {
  const reuses_told_after told{*this};
  if (observer_ == nullptr) {
    std::lock_guard lock(mutex_);
    planned_block& b = blocks_[freed_index(ptr)];
    vacate(b);
    note_free(b.allocated_at, b.address);
    return_lent_if_unused();
    return;
  }
  std::size_t index = 0;
  std::size_t bytes = 0;
  stream_id stream{};
  {
    std::lock_guard lock(mutex_);
    index = freed_index(ptr);
    planned_block& b = blocks_[index];
    b.state = slot_state::freeing;  // out of every other call's reach while the observer runs
    bytes = b.bytes;
    stream = b.stream->id();
  }
  // Told before the bytes can be reused, so no one hears of their next allocation first.
  observer_->on_free(ptr, bytes, stream);
  std::lock_guard lock(mutex_);
  planned_block& b = blocks_[index];
  vacate(b);
  note_free(b.allocated_at, b.address);
  return_lent_if_unused();
}

void iteration_plan::note_free(std::uint64_t allocated_at, std::uintptr_t address) {
  const std::uint64_t distance = allocated_at == 0 ? unknown_distance : sequence_ + 1 - allocated_at;
  if (phase_ == phase::planning) {
    const follow f = follow_period(request{request_kind::free, 0, stream_id{}, distance});
    if (f == follow::pools) {
      ++sequence_;
      return;
    }
    if (f == follow::off) {
      log_free(allocated_at, address);
      return;
    }
  }
  if (phase_ != phase::active && begin_with(request{request_kind::free, 0, stream_id{}, distance}) &&
      phase_ != phase::active && phase_ != phase::recording) {
    ++sequence_;  // the first request of a period the pools serve without device calls
    return;
  }
  if (phase_ == phase::active) {
    const request& next = expected();
    if (next.kind == request_kind::free && allocated_at != 0 && next.distance == sequence_ + 1 - allocated_at) {
      ++sequence_;
      return;
    }
    derail();
  }
  log_free(allocated_at, address);
}

void iteration_plan::pool_freed(std::uint64_t sequence, const void* ptr) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  const reuses_told_after told{*this};
  const phase now = phase_.load(std::memory_order_acquire);
  if (now == phase::settled) return;
  if (now == phase::active) {
    std::lock_guard lock(mutex_);
    note_free(sequence, address);
    return;
  }
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    disturbed_.store(true, std::memory_order_relaxed);
    return;
  }
  note_free(sequence, address);
}

bool iteration_plan::record_stream(void* ptr, StreamImpl& stream) {
  std::shared_ptr<StreamImpl> share = share_stream(stream);
  std::lock_guard lock(mutex_);
  planned_block& b = blocks_[live_index(ptr, "record_stream")];
  if (b.stream.get() == &stream) return false;
  if (std::any_of(b.recorded.begin(), b.recorded.end(), [&](const auto& r) { return r.get() == &stream; })) return false;
  b.recorded.push_back(std::move(share));
  return true;
}

block_info iteration_plan::block_of(const void* ptr) const {
  std::lock_guard lock(mutex_);
  const planned_block& b = blocks_[live_index(ptr, "block_of")];
  return {reinterpret_cast<void*>(b.address), b.bytes, b.requested, b.stream->id()};
}

StreamRef iteration_plan::allocation_stream(const void* ptr) const {
  std::lock_guard lock(mutex_);
  return StreamRef(blocks_[live_index(ptr, "allocation_stream")].stream.get());
}

std::vector<iteration_plan::arena_view> iteration_plan::view() const {
  std::lock_guard lock(mutex_);
  std::vector<arena_view> out;
  for (const arena_range& r : ranges_) out.push_back({r.address, r.bytes, r.lender != nullptr, {}});
  for (const planned_block& b : blocks_) {
    if (b.state == slot_state::free) continue;
    out[range_at(b.offset)].live.push_back(
        {reinterpret_cast<void*>(b.address), b.bytes, b.requested, b.stream->id()});
  }
  return out;
}

void iteration_plan::add_stats(allocator_stats& total) const {
  std::lock_guard lock(mutex_);
  const arena_counters& c = counters_;
  const stat_counter bytes = counter_of(c.bytes, c.bytes_peak, c.bytes_total);
  const stat_counter blocks = counter_of(c.blocks, c.blocks_peak, c.blocks_total);
  total.allocated_bytes.merge(bytes);
  total.active_bytes.merge(bytes);
  total.requested_bytes.merge(counter_of(c.requested, c.requested_peak, c.requested_total));
  total.allocation.merge(blocks);
  total.active.merge(blocks);
  total.num_cross_stream_reuses += cross_stream_reuses_;
  total.num_plan_activations = activations_;
  total.num_plan_derailments = derailments_;
  total.num_planned_allocations = planned_requests_;
  total.plan_arena_bytes = arena_bytes();
}

void iteration_plan::release_if_unused() {
  const reuses_told_after told{*this};
  std::lock_guard lock(mutex_);
  if (!has_arena() || !unused()) return;
  release_arena();
  restart_recording();
}

}  // namespace streamsafe::detail
