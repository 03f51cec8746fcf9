// The detection loop: the race test for one shadow cell, and the shadow update after an access.
// An earlier access is ordered before the current one exactly when it was made by the same agent
// or the current agent's clock has seen its epoch (TSan's one-line test). A free leaves the cell
// `freed`, so touching it again is a use-after-free; the old accesses the host has not seen finish
// stay as `retired` and race with the new lifetime as a reuse race: those the release point did
// not cover (a missing record_stream) with any new access, the others with a new access that is
// not ordered after the allocation (a block used off its allocation stream without a wait).
#pragma once

#include <algorithm>

#include "hazard/shadow_cell.hpp"
#include "hazard/vector_clock.hpp"
#include "streamsafe/hazard/hazard.hpp"

namespace streamsafe::hazard::detail {

/// The access being checked: the acting agent's clock (already ticked) and the record to store.
struct current_access {
  const vector_clock& clock;
  access_record record;

  [[nodiscard]] bool is_ordered_after(const access_record& old) const noexcept {
    return old.agent == record.agent || clock.covers(old.agent, old.time);
  }
};

[[nodiscard]] inline hazard_kind plain_race_kind(agent_slot earlier, agent_slot later) noexcept {
  return (earlier == host_slot || later == host_slot) ? hazard_kind::host_race : hazard_kind::race;
}

/// The free that ended a cell's previous lifetime, as the "earlier access" of a use-after-free.
[[nodiscard]] inline access_record as_access(const free_record& freed) noexcept {
  return access_record{host_slot, freed.label, epoch{0}, freed.line, access_mode::write};
}

/// True when `now` is ordered after the retired access `old`: directly, or, for an access the
/// release point covered, through the allocation that began this lifetime.
[[nodiscard]] inline bool is_ordered_after_retired(const shadow_cell& cell, const current_access& now,
                                                   const retired_access& old) noexcept {
  if (now.is_ordered_after(old.access)) return true;
  return old.released && cell.allocated && now.is_ordered_after(*cell.allocated);
}

/// Calls on_conflict(kind, earlier, allocation) for each earlier access in `cell` that conflicts
/// with `now`. `allocation` is null except for a reuse race that only the allocation stream is
/// ordered against: then it is the allocation that `now` should have been ordered after.
template <typename OnConflict>
void find_conflicts(const shadow_cell& cell, const current_access& now, OnConflict&& on_conflict) {
  if (cell.state == lifetime_state::freed) {
    on_conflict(hazard_kind::use_after_free, as_access(cell.freed_by), nullptr);
    return;
  }
  const bool writing = now.record.mode == access_mode::write;
  const auto check = [&](const access_record& old, hazard_kind kind) {
    if (!now.is_ordered_after(old)) on_conflict(kind, old, nullptr);
  };
  if (cell.write) check(*cell.write, plain_race_kind(cell.write->agent, now.record.agent));
  if (writing) cell.reads.for_each([&](const access_record& read) { check(read, plain_race_kind(read.agent, now.record.agent)); });
  for (const auto& old : cell.retired) {
    if ((writing || old.access.mode == access_mode::write) && !is_ordered_after_retired(cell, now, old)) {
      on_conflict(hazard_kind::reuse_race, old.access, old.released ? &*cell.allocated : nullptr);
    }
  }
}

/// Stores `now` in a live or untracked cell (FastTrack): a write replaces the write and the reads;
/// a read joins the reads. Retired accesses that `now` is ordered after stop mattering: a later
/// access unordered with them is unordered with `now` too, and is reported against `now`.
inline void record_access(shadow_cell& cell, const current_access& now) {
  const bool writing = now.record.mode == access_mode::write;
  std::erase_if(cell.retired, [&](const retired_access& old) {
    return is_ordered_after_retired(cell, now, old) && (writing || old.access.mode == access_mode::read);
  });
  if (cell.retired.empty()) cell.allocated.reset();
  if (writing) {
    cell.write = now.record;
    cell.reads.clear();
  } else {
    cell.reads.add(now.record, [&](const access_record& old) { return now.is_ordered_after(old); });
  }
}

/// The state of the program at a free that decides what the freed cells keep.
struct release_point {
  const vector_clock& clock;  // the release point: what the next allocation's stream follows
  const vector_clock& host;   // what every later access follows (each later op follows the host)
};

/// Ends the lifetime of a cell at a free. An access the host has seen finish precedes every later
/// access and is forgotten; the others are kept, marked `released` when the release point covers
/// them (they then race only with new-lifetime accesses not ordered after the next allocation).
inline void retire(shadow_cell& cell, const release_point& release, const free_record& freed) {
  std::vector<retired_access> kept;
  const auto keep_unless_seen = [&](const access_record& old, bool released) {
    if (release.host.covers(old.agent, old.time)) return;
    kept.push_back(retired_access{old, released || release.clock.covers(old.agent, old.time)});
  };
  const auto keep = [&](const access_record& old) { keep_unless_seen(old, false); };
  if (cell.write) keep(*cell.write);
  cell.reads.for_each(keep);
  for (const auto& old : cell.retired) keep_unless_seen(old.access, old.released);
  cell.write.reset();
  cell.reads.clear();
  cell.retired = std::move(kept);
  cell.allocated.reset();
  cell.state = lifetime_state::freed;
  cell.freed_by = freed;
}

}  // namespace streamsafe::hazard::detail
