// The distinct values of a set of offsets in ascending order, and each offset's place among them:
// what the repeat plan's indexes (its cells, its blocks' starts) are made of, once per switch,
// over a period's worth of offsets. Those offsets are multiples of the allocator's rounding and
// lie within a footprint little above the bytes they cover, so a bit per granule up to the
// largest orders them in one pass, and a place costs two reads, where a sort costs n log n and
// each place a binary search over the whole set. Offsets spread far wider than their number (a
// bitmap bigger than the set) are sorted instead; both give the same answers.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace streamsafe::detail {

/// Immutable once built: concurrent reads are safe.
class offset_index {
 public:
  /// Indexes `offsets` (any order; repeats count once).
  explicit offset_index(std::vector<std::size_t> offsets);

  /// How many distinct offsets the set holds.
  [[nodiscard]] std::size_t size() const noexcept { return distinct_; }
  /// How many distinct offsets of the set lie below `offset`: a member's place in ascending order.
  [[nodiscard]] std::size_t rank(std::size_t offset) const noexcept;
  /// Appends the set's offsets in [from, to), ascending, to `out`, each through `map`.
  template <typename Map, typename Out>
  void append_between(std::size_t from, std::size_t to, Map&& map, std::vector<Out>& out) const;

  /// Whether the set is held as bits (else sorted): for tests of both.
  [[nodiscard]] bool as_bits() const noexcept { return !bits_.empty(); }

 private:
  /// The bit of the lowest possible member at or above `offset`: members are multiples of the
  /// granule, so its bit rounded up (without adding, which could wrap near the top of the range).
  [[nodiscard]] std::size_t bit_at_or_above(std::size_t offset) const noexcept {
    return (offset >> shift_) + ((offset & ((std::size_t{1} << shift_) - 1)) != 0 ? 1 : 0);
  }

  std::size_t distinct_ = 0;
  unsigned shift_ = 0;                  // bits: offset >> shift_ is the offset's bit
  std::vector<std::uint64_t> bits_;     // bits: the set
  std::vector<std::uint32_t> before_;   // bits: set bits in the words before each word
  std::vector<std::size_t> sorted_;     // else: the set, ascending
};

template <typename Map, typename Out>
void offset_index::append_between(std::size_t from, std::size_t to, Map&& map, std::vector<Out>& out) const {
  if (!as_bits()) {
    for (std::size_t k = rank(from); k < sorted_.size() && sorted_[k] < to; ++k) out.push_back(map(sorted_[k]));
    return;
  }
  const std::size_t first_bit = bit_at_or_above(from);
  for (std::size_t word = first_bit / 64; word < bits_.size() && (word * 64) << shift_ < to; ++word) {
    std::uint64_t w = bits_[word];
    if (word == first_bit / 64) w &= ~std::uint64_t{0} << (first_bit % 64);
    for (; w != 0; w &= w - 1) {
      const std::size_t offset = (word * 64 + static_cast<std::size_t>(std::countr_zero(w))) << shift_;
      if (offset >= to) return;
      out.push_back(map(offset));
    }
  }
}

}  // namespace streamsafe::detail
