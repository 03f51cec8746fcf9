// A vector clock over agent slots, with the operations named after GUIDE.md section 3: an agent
// ticks its own entry, a wait or sync joins another clock, an event record copies one (plain
// assignment). Missing entries are epoch 0, so clocks grow only as far as the slots they saw.
#pragma once

#include <vector>

#include "hazard/epoch.hpp"

namespace streamsafe::hazard::detail {

class vector_clock {
 public:
  [[nodiscard]] epoch get(agent_slot slot) const noexcept {
    return index(slot) < entries_.size() ? entries_[index(slot)] : epoch{0};
  }
  /// The agent's own time advances by one; returns the new epoch.
  epoch tick(agent_slot slot);
  /// This clock learns everything `other` has seen (a wait, a sync: "acquire").
  void join(const vector_clock& other);
  /// True when the access of `slot` at `time` happened before what this clock has seen.
  [[nodiscard]] bool covers(agent_slot slot, epoch time) const noexcept { return ticks(get(slot)) >= ticks(time); }
  /// True when `other` adds nothing to this clock (other <= this, entry by entry).
  [[nodiscard]] bool includes(const vector_clock& other) const noexcept;
  /// Forgets everything but `slot`'s own time, which continues after `last` (a recycled slot).
  void restart(agent_slot slot, epoch last);
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

 private:
  std::vector<epoch> entries_;
};

}  // namespace streamsafe::hazard::detail
