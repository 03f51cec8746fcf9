// The fixed-size form of one rank's step sequence that NCCL ranks all-gather for the order
// check: plain bytes, the same layout on every rank of one build.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "streamsafe/pipeline/collectives/collective_sequence.hpp"

namespace streamsafe::collectives::detail {

inline constexpr std::uint32_t wire_capacity = 64;  // collectives per step carried in full

struct WireRecord {
  std::uint32_t kind = 0;
  std::uint32_t bucket = 0;
  std::uint64_t bytes = 0;
};

struct WireSequence {
  std::uint64_t step = 0;
  std::uint64_t hash = 0;
  std::uint32_t count = 0;  // all issued; records past wire_capacity are in the hash only
  std::uint32_t reserved = 0;
  WireRecord records[wire_capacity];
};
static_assert(sizeof(WireSequence) == 24 + 16 * wire_capacity, "WireSequence must have no padding");

[[nodiscard]] WireSequence to_wire(const collective_sequence& sequence);
/// Back to a sequence (hash recomputed), naming buckets from `names` where known.
[[nodiscard]] collective_sequence from_wire(const WireSequence& wire, const std::map<std::uint32_t, std::string>& names);
/// The order_mismatch text when some rank's wire sequence differs from rank 0's; empty if none.
[[nodiscard]] std::string compare_wires(const WireSequence* wires, int size,
                                        const std::map<std::uint32_t, std::string>& names);

}  // namespace streamsafe::collectives::detail
