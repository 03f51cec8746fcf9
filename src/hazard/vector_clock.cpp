// Vector clock operations; see vector_clock.hpp.
#include "hazard/vector_clock.hpp"

#include <algorithm>

namespace streamsafe::hazard::detail {

epoch vector_clock::tick(agent_slot slot) {
  if (index(slot) >= entries_.size()) entries_.resize(index(slot) + 1, epoch{0});
  auto& own = entries_[index(slot)];
  own = next(own);
  return own;
}

void vector_clock::join(const vector_clock& other) {
  if (other.entries_.size() > entries_.size()) entries_.resize(other.entries_.size(), epoch{0});
  for (std::size_t i = 0; i < other.entries_.size(); ++i) {
    entries_[i] = std::max(entries_[i], other.entries_[i]);
  }
}

void vector_clock::restart(agent_slot slot, epoch last) {
  entries_.assign(index(slot) + 1, epoch{0});
  entries_[index(slot)] = last;
}

bool vector_clock::includes(const vector_clock& other) const noexcept {
  for (std::size_t i = 0; i < other.entries_.size(); ++i) {
    if (ticks(other.entries_[i]) > ticks(get(agent_slot{static_cast<std::uint32_t>(i)}))) return false;
  }
  return true;
}

}  // namespace streamsafe::hazard::detail
