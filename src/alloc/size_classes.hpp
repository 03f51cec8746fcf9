// Size rounding and the two-level size-class index of the free bins (TLSF-style: a power of two,
// then 32 linear steps inside it), so a fitting free block is found in O(1) with two bit scans.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace streamsafe::detail {

inline constexpr std::size_t min_block_bytes = 512;  // every block size is a multiple of this
inline constexpr std::size_t max_request_bytes = std::size_t{1} << 47;
inline constexpr unsigned sub_class_bits = 5;
inline constexpr unsigned sub_class_count = 1u << sub_class_bits;
inline constexpr unsigned class_count = 48;

[[nodiscard]] constexpr std::size_t round_up(std::size_t bytes, std::size_t to) noexcept {
  return (bytes + to - 1) / to * to;
}

[[nodiscard]] constexpr std::size_t round_request(std::size_t bytes) noexcept {
  return bytes < min_block_bytes ? min_block_bytes : round_up(bytes, min_block_bytes);
}

struct size_class {
  unsigned first = 0;   // power-of-two class
  unsigned second = 0;  // linear step within it
};

/// The class holding blocks of exactly `bytes` (a multiple of min_block_bytes).
[[nodiscard]] constexpr size_class class_of(std::size_t bytes) noexcept {
  const std::uint64_t units = bytes / min_block_bytes;
  if (units < sub_class_count) return {0, static_cast<unsigned>(units)};
  const unsigned log = static_cast<unsigned>(std::bit_width(units)) - 1;
  return {log - sub_class_bits + 1, static_cast<unsigned>((units >> (log - sub_class_bits)) ^ sub_class_count)};
}

/// The first class whose every block is at least `bytes`: searching there and above never
/// needs to look at a block's size.
[[nodiscard]] constexpr size_class class_at_least(std::size_t bytes) noexcept {
  const std::uint64_t units = bytes / min_block_bytes;
  if (units < sub_class_count) return {0, static_cast<unsigned>(units)};
  const unsigned log = static_cast<unsigned>(std::bit_width(units)) - 1;
  const std::uint64_t step = std::uint64_t{1} << (log - sub_class_bits);
  return class_of((units + step - 1) / step * step * min_block_bytes);
}

/// The first virtual range a stream reserves for expandable memory when
/// allocator_options::expandable_reserve_bytes is 0.
inline constexpr std::size_t initial_range_bytes = std::size_t{64} << 20;

/// Bytes of the next virtual range, `held` being what the stream's ranges of its kind hold so
/// far and `needed` the request (granularity-rounded): `option` when set, else as much as is held
/// (at least initial_range_bytes), so a stream's ranges double as it grows and address space
/// stays within twice what it uses.
[[nodiscard]] constexpr std::size_t next_range_bytes(std::size_t needed, std::size_t held, std::size_t option) noexcept {
  if (option != 0) return needed > option ? needed : option;
  const std::size_t doubling = held > initial_range_bytes ? held : initial_range_bytes;
  return needed > doubling ? needed : doubling;
}

}  // namespace streamsafe::detail
