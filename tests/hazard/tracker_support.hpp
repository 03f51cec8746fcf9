// Helpers of the tests that drive a hazard::tracker on a live device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <vector>

#include "streamsafe/hazard/hazard.hpp"
#include "streamsafe/hazard/tracker.hpp"

namespace streamsafe::hazard {
/// gtest prints kinds by name in failure messages.
inline void PrintTo(hazard_kind kind, std::ostream* out) { *out << kind_name(kind); }
}  // namespace streamsafe::hazard

namespace streamsafe::testing {

/// Elements (and bytes) of the buffers these tests share between streams.
inline constexpr std::size_t count = 512;
inline constexpr std::size_t bytes = count * sizeof(std::uint32_t);

/// The kinds of the hazards `tracker` collected, in the order found.
inline std::vector<hazard::hazard_kind> kinds(const hazard::tracker& tracker) {
  std::vector<hazard::hazard_kind> found;
  for (const auto& h : tracker.hazards()) found.push_back(h.kind);
  return found;
}

}  // namespace streamsafe::testing
