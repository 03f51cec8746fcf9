// The detection loop: the race test for one shadow cell, and the shadow update after an access.
// An earlier access is ordered before the current one exactly when it was made by the same agent
// or the current agent's clock has seen its epoch (TSan's one-line test). A free leaves the cell
// `freed`, so touching it again is a use-after-free; the accesses its release point did not
// cover stay as `retired` and race with the new lifetime as a reuse race.
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

/// Calls on_conflict(kind, earlier) for each earlier access in `cell` that conflicts with `now`.
template <typename OnConflict>
void find_conflicts(const shadow_cell& cell, const current_access& now, OnConflict&& on_conflict) {
  if (cell.state == lifetime_state::freed) {
    on_conflict(hazard_kind::use_after_free, as_access(cell.freed_by));
    return;
  }
  const bool writing = now.record.mode == access_mode::write;
  const auto check = [&](const access_record& old, hazard_kind kind) {
    if (!now.is_ordered_after(old)) on_conflict(kind, old);
  };
  if (cell.write) check(*cell.write, plain_race_kind(cell.write->agent, now.record.agent));
  if (writing) cell.reads.for_each([&](const access_record& read) { check(read, plain_race_kind(read.agent, now.record.agent)); });
  for (const auto& old : cell.retired) {
    if (writing || old.mode == access_mode::write) check(old, hazard_kind::reuse_race);
  }
}

/// Stores `now` in a live or untracked cell (FastTrack): a write replaces the write and the reads;
/// a read joins the reads. Retired accesses that `now` is ordered after stop mattering: a later
/// access unordered with them is unordered with `now` too, and is reported against `now`.
inline void record_access(shadow_cell& cell, const current_access& now) {
  const bool writing = now.record.mode == access_mode::write;
  std::erase_if(cell.retired, [&](const access_record& old) {
    return now.is_ordered_after(old) && (writing || old.mode == access_mode::read);
  });
  if (writing) {
    cell.write = now.record;
    cell.reads.clear();
  } else {
    cell.reads.add(now.record, [&](const access_record& old) { return now.is_ordered_after(old); });
  }
}

/// Ends the lifetime of a cell at a free: forgets what the release point covers, keeps the rest.
inline void retire(shadow_cell& cell, const vector_clock& release, const free_record& freed) {
  std::vector<access_record> kept;
  const auto keep_if_uncovered = [&](const access_record& old) {
    if (!release.covers(old.agent, old.time)) kept.push_back(old);
  };
  if (cell.write) keep_if_uncovered(*cell.write);
  cell.reads.for_each(keep_if_uncovered);
  std::for_each(cell.retired.begin(), cell.retired.end(), keep_if_uncovered);
  cell.write.reset();
  cell.reads.clear();
  cell.retired = std::move(kept);
  cell.state = lifetime_state::freed;
  cell.freed_by = freed;
}

}  // namespace streamsafe::hazard::detail
