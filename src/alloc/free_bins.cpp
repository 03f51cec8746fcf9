#include "alloc/free_bins.hpp"

#include <bit>

namespace streamsafe::detail {

void free_bins::insert(block* b) noexcept {
  const auto [first, second] = class_of(b->size);
  block*& head = heads_[first][second];
  b->prev_free = nullptr;
  b->next_free = head;
  if (head != nullptr) head->prev_free = b;
  head = b;
  first_level_ |= std::uint64_t{1} << first;
  second_level_[first] |= 1u << second;
}

void free_bins::remove(block* b) noexcept {
  const auto [first, second] = class_of(b->size);
  if (b->prev_free != nullptr) {
    b->prev_free->next_free = b->next_free;
  } else {
    heads_[first][second] = b->next_free;
  }
  if (b->next_free != nullptr) b->next_free->prev_free = b->prev_free;
  b->prev_free = b->next_free = nullptr;
  if (heads_[first][second] == nullptr) {
    second_level_[first] &= ~(1u << second);
    if (second_level_[first] == 0) first_level_ &= ~(std::uint64_t{1} << first);
  }
}

block* free_bins::find(std::size_t bytes) const noexcept {
  if (best_fit_) return find_best(bytes);
  const auto own = class_of(bytes);
  block* best = nullptr;
  int looks = 0;
  for (block* b = heads_[own.first][own.second]; b != nullptr && looks < own_class_looks; b = b->next_free, ++looks) {
    if (b->size >= bytes && (best == nullptr || b->size < best->size)) best = b;
    if (best != nullptr && best->size == bytes) break;
  }
  if (best != nullptr) return best;
  return first_at_or_above(class_at_least(bytes));
}

block* free_bins::find_best(std::size_t bytes) const noexcept {
  const auto better = [](const block* b, const block* best) {
    return best == nullptr || b->size < best->size || (b->size == best->size && b->address < best->address);
  };
  const auto own = class_of(bytes);
  block* best = nullptr;
  for (block* b = heads_[own.first][own.second]; b != nullptr; b = b->next_free) {
    if (b->size >= bytes && better(b, best)) best = b;
  }
  if (best != nullptr) return best;
  // Every block of the first class at or above class_at_least fits: the best is among them.
  for (block* b = first_at_or_above(class_at_least(bytes)); b != nullptr; b = b->next_free) {
    if (better(b, best)) best = b;
  }
  return best;
}

block* free_bins::first_at_or_above(size_class from) const noexcept {
  if (from.first >= class_count) return nullptr;
  const std::uint32_t second_mask = from.second >= 32 ? 0u : (~0u << from.second);
  if (const std::uint32_t seconds = second_level_[from.first] & second_mask; seconds != 0) {
    return heads_[from.first][static_cast<unsigned>(std::countr_zero(seconds))];
  }
  const unsigned next_first = from.first + 1;
  if (next_first >= class_count) return nullptr;
  const std::uint64_t firsts = first_level_ & (~std::uint64_t{0} << next_first);
  if (firsts == 0) return nullptr;
  const auto first = static_cast<unsigned>(std::countr_zero(firsts));
  return heads_[first][static_cast<unsigned>(std::countr_zero(second_level_[first]))];
}

}  // namespace streamsafe::detail
