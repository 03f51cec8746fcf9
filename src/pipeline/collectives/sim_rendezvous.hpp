// Where the sim ranks' collective kernels meet: the k-th collective of every rank waits in slot
// k until all ranks have arrived; the last to arrive compares their sequences and sums.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "streamsafe/pipeline/collectives/collective_sequence.hpp"

namespace streamsafe::collectives::detail {

/// One rank's part in one collective; lives on the arriving kernel's stack while it waits.
struct SimArrival {
  int rank = 0;
  const collective_sequence* issued = nullptr;  // up to and including this collective
  float* data = nullptr;
  std::size_t count = 0;
};

class SimRendezvous {
 public:
  SimRendezvous(int size, std::chrono::milliseconds timeout) : size_(size), timeout_(timeout) {}

  [[nodiscard]] int size() const { return size_; }
  [[nodiscard]] std::string abort_reason() const;

  /// Blocks until every rank arrived at slot `index`, then leaves the sum in every rank's
  /// buffer. Throws order_mismatch (the sequences differ), error (timeout) or the group's
  /// abort reason; each failure aborts the group.
  void all_reduce(std::uint64_t index, const SimArrival& arrival);

 private:
  struct Slot {
    std::vector<const SimArrival*> arrivals;
    int arrived = 0;
    int left = 0;
    bool reduced = false;
  };
  using lock_type = std::unique_lock<std::mutex>;
  enum class failure { order_mismatch, peer_missing };

  void complete(Slot& slot);
  /// With mutex_ held: records the group's first failure, wakes every waiting rank, throws it.
  [[noreturn]] void abort(failure kind, std::string reason);
  [[noreturn]] void throw_abort_reason(const std::string& context) const;
  [[nodiscard]] std::string missing_ranks(const Slot& slot) const;
  void leave(std::uint64_t index, Slot& slot);

  const int size_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::uint64_t, Slot> slots_;
  std::string abort_reason_;
  failure abort_kind_ = failure::peer_missing;
};

}  // namespace streamsafe::collectives::detail
