// The order check's record: the sequence of collectives one rank issued in one step, and a
// running hash of it that ranks can exchange cheaply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "streamsafe/error.hpp"

namespace streamsafe::collectives {

enum class collective_kind : std::uint32_t { all_reduce = 1 };

/// Names a collective for the order check: the bucket it reduces and a readable name.
struct collective_label {
  std::uint32_t bucket = 0;
  std::string name;
};

/// One issued collective. Two ranks agree on it when kind, bucket and bytes are equal (the
/// name is for reports only).
struct collective_record {
  collective_kind kind = collective_kind::all_reduce;
  std::uint32_t bucket = 0;
  std::uint64_t bytes = 0;
  std::string name;
};

/// The collectives of one step, in issue order. Not thread-safe (one rank's host thread).
class collective_sequence {
 public:
  /// Clears the sequence and seeds the hash with `step`.
  void begin(std::uint64_t step);
  /// Appends `record`; returns the running hash including it.
  std::uint64_t add(collective_record record);

  [[nodiscard]] std::uint64_t step() const { return step_; }
  [[nodiscard]] std::uint64_t hash() const { return hash_; }
  [[nodiscard]] const std::vector<collective_record>& records() const { return records_; }
  /// "all_reduce bucket 1 'b1' 4096 B, all_reduce bucket 0 'b0' 8192 B" (or "(none)").
  [[nodiscard]] std::string describe() const;

 private:
  std::uint64_t step_ = 0;
  std::uint64_t hash_ = 0;
  std::vector<collective_record> records_;
};

/// A rank issued its collectives in another order than rank 0 (or never arrived at one).
/// what() names the step, the collective, and both sequences.
class order_mismatch : public error {
 public:
  using error::error;
};

/// The text of an order_mismatch: step, the rank, and both sequences.
[[nodiscard]] std::string describe_mismatch(std::uint64_t step, int rank, const collective_sequence& mine,
                                            const collective_sequence& rank0);

}  // namespace streamsafe::collectives
