#include "alloc/offset_index.hpp"

#include <algorithm>
#include <bit>

namespace streamsafe::detail {

namespace {

/// The largest power of two dividing every offset (any, when all are 0), as a shift.
unsigned common_shift(const std::vector<std::size_t>& offsets) noexcept {
  std::size_t any = 0;
  for (const std::size_t o : offsets) any |= o;
  return any == 0 ? 0 : static_cast<unsigned>(std::countr_zero(any));
}

}  // namespace

offset_index::offset_index(std::vector<std::size_t> offsets) {
  if (offsets.empty()) return;
  shift_ = common_shift(offsets);
  const std::size_t largest = *std::max_element(offsets.begin(), offsets.end());
  const std::size_t words = (largest >> shift_) / 64 + 1;
  // A bitmap no bigger than the offsets themselves (and a few pages for small sets) is cheaper
  // to fill and read than sorting them.
  if (words > offsets.size() + 1024) {
    std::sort(offsets.begin(), offsets.end());
    offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
    distinct_ = offsets.size();
    sorted_ = std::move(offsets);
    return;
  }
  bits_.assign(words, 0);
  for (const std::size_t o : offsets) {
    const std::size_t bit = o >> shift_;
    bits_[bit / 64] |= std::uint64_t{1} << (bit % 64);
  }
  before_.resize(words);
  std::uint32_t count = 0;
  for (std::size_t w = 0; w < words; ++w) {
    before_[w] = count;
    count += static_cast<std::uint32_t>(std::popcount(bits_[w]));
  }
  distinct_ = count;
}

std::size_t offset_index::rank(std::size_t offset) const noexcept {
  if (!as_bits()) {
    return static_cast<std::size_t>(std::lower_bound(sorted_.begin(), sorted_.end(), offset) - sorted_.begin());
  }
  // Members below `offset` sit below the bit of the lowest one that could be at or above it.
  const std::size_t bit = bit_at_or_above(offset);
  const std::size_t word = bit / 64;
  if (word >= bits_.size()) return distinct_;
  const std::uint64_t below = bits_[word] & ((std::uint64_t{1} << (bit % 64)) - 1);
  return before_[word] + static_cast<std::size_t>(std::popcount(below));
}

}  // namespace streamsafe::detail
