// The cuda backend of communicator: NCCL, one rank per process (or per device), collectives
// enqueued on the caller's cudaStream_t. Built only with the cuda backend
// (STREAMSAFE_HAVE_CUDA in streamsafe/config.hpp); without it the constructor throws.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "streamsafe/device.hpp"
#include "streamsafe/pipeline/collectives/communicator.hpp"

namespace streamsafe::collectives {

namespace detail {
class NcclState;
}

/// The 128 bytes of an ncclUniqueId: made by one rank, handed to the others (a file, a socket).
struct nccl_unique_id {
  std::array<char, 128> bytes{};
  /// ncclGetUniqueId. Throws error (naming the call and NCCL's message) on failure.
  [[nodiscard]] static nccl_unique_id create();
  /// FNV-1a of the bytes: the same on every rank given this id.
  [[nodiscard]] std::uint64_t hash() const noexcept;
};

/// Rank `rank` of `size` on `device` (a cuda Device). The constructor blocks until every rank
/// has joined (ncclCommInitRank); the destructor destroys the ncclComm_t (ncclCommAbort after
/// a failed collective, so no rank waits on a peer that left).
///
/// Order check: at each begin_step the rank all-gathers the previous step's sequence (hash and
/// the (kind, bucket, bytes) of up to 64 collectives: 1048 bytes per rank) on a stream of its
/// own, after an event recorded behind its last all-reduce, into pinned memory, and compares
/// the exchanges that have landed without blocking the host (the third exchange in flight
/// waits for the first). A difference throws order_mismatch naming both sequences at a later
/// begin_step, or at verify_order, which exchanges the current step and waits. Every rank must
/// call begin_step and verify_order at the same points. A reordering of equal-size buckets is
/// caught this way; NCCL may hang inside the step itself when the byte counts differ, before
/// any check can run. Each all_reduce also records one event on its stream.
class nccl_communicator final : public communicator {
 public:
  nccl_communicator(const Device& device, int rank, int size, const nccl_unique_id& id);
  ~nccl_communicator() override;

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }
  [[nodiscard]] std::string name() const override;
  void begin_step(std::uint64_t step) override;
  void all_reduce(void* buffer, std::size_t count, data_type type, reduce_op op, StreamRef stream,
                  const collective_label& label) override;
  [[nodiscard]] const collective_sequence& issued() const override { return issued_; }
  [[nodiscard]] std::uint64_t group_id() const override { return group_id_; }
  /// Exchanges the current step's sequence and blocks the host until every exchange so far
  /// has been compared (a host synchronization: for the end of a run, or a test). Throws
  /// order_mismatch on a difference.
  void verify_order();

  /// The ncclComm_t, for callers that issue NCCL calls of their own.
  [[nodiscard]] void* native() const;

 private:
  enum class order_wait { landed_only, until_compared };
  void exchange_order(order_wait wait);

  Device device_;
  int rank_;
  int size_;
  std::uint64_t group_id_;
  collective_sequence issued_;
  std::unique_ptr<detail::NcclState> state_;
};

}  // namespace streamsafe::collectives
