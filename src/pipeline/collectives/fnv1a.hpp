// FNV-1a, for what ranks must agree on: cheap, and stable across builds and hosts.
#pragma once

#include <cstdint>

namespace streamsafe::collectives::detail {

inline constexpr std::uint64_t fnv_offset = 0xcbf29ce484222325ULL;

/// `hash` with one more byte folded in.
[[nodiscard]] constexpr std::uint64_t fnv_byte(std::uint64_t hash, unsigned char byte) noexcept {
  constexpr std::uint64_t fnv_prime = 0x100000001b3ULL;
  return (hash ^ byte) * fnv_prime;
}

}  // namespace streamsafe::collectives::detail
