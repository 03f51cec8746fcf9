// Free blocks of one stream and pool, binned by size class with a bitmap per level: insert,
// remove and find are O(1) whatever the number of free blocks (no list scan).
#pragma once

#include <array>
#include <cstdint>

#include "alloc/block.hpp"
#include "alloc/size_classes.hpp"

namespace streamsafe::detail {

class free_bins {
 public:
  void insert(block* b) noexcept;
  void remove(block* b) noexcept;
  /// A free block of at least `bytes`, not removed: first a look at the few most recently freed
  /// blocks of `bytes`' own class (an exact same-stream reuse lands there), then the head of the
  /// first class whose blocks all fit. Best fit to within one class (1/32 of the size).
  [[nodiscard]] block* find(std::size_t bytes) const noexcept;
  /// From now on find returns the smallest free block that holds `bytes`, the lowest address
  /// among equals (a scan of one or two classes, no longer O(1)): where a block goes is then a
  /// function of the free blocks alone, and low addresses fill first.
  void use_best_fit() noexcept { best_fit_ = true; }
  [[nodiscard]] bool empty() const noexcept { return first_level_ == 0; }

 private:
  static constexpr int own_class_looks = 4;
  [[nodiscard]] block* first_at_or_above(size_class from) const noexcept;
  [[nodiscard]] block* find_best(std::size_t bytes) const noexcept;

  bool best_fit_ = false;
  std::uint64_t first_level_ = 0;
  std::array<std::uint32_t, class_count> second_level_{};
  std::array<std::array<block*, sub_class_count>, class_count> heads_{};
};

}  // namespace streamsafe::detail
