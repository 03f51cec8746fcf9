// A communicator: one rank's view of a group of ranks that reduce buffers together, with the
// collectives enqueued on streams like any other device work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "streamsafe/pipeline/collectives/collective_sequence.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::collectives {

enum class data_type { float32 };
enum class reduce_op { sum };

[[nodiscard]] std::size_t size_of(data_type type);

/// The rank's side of a group. Every rank must issue the same collectives in the same order
/// (same kind, bucket and byte count): the communicator hashes what each rank issues per step
/// and ends the run with order_mismatch, naming both sequences, when a rank's order differs.
///
/// Threads: one communicator belongs to one host thread at a time (its rank's), as an NCCL
/// communicator does; different ranks' communicators may be used from different threads.
class communicator {
 public:
  virtual ~communicator() = default;
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;

  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  /// "sim rank 1/4", "nccl rank 0/2 (cuda:0)": for reports and errors.
  [[nodiscard]] virtual std::string name() const = 0;
  /// The same for every rank of the group, and another for another group in the process: a
  /// hazard tracker over several ranks' devices pairs the ranks' parts of a collective by it
  /// (hazard::tracker::track_collective).
  [[nodiscard]] virtual std::uint64_t group_id() const = 0;

  /// Starts step `step`: the order check compares the collectives issued from here on, and
  /// (nccl) checks the previous steps' exchanged sequences that have arrived. Throws
  /// order_mismatch when an earlier step's order differed.
  virtual void begin_step(std::uint64_t step) = 0;

  /// Enqueues an in-place all-reduce of `count` elements at `buffer` on `stream`; returns at
  /// once (no host synchronization). Work enqueued on `stream` after this call sees the
  /// reduced values; the buffer must not be touched by other streams until then. `label`
  /// names the collective in the order check and in errors. Failures: sim reports an order
  /// mismatch or a rank that never arrives at the rank's next host wait on the stream's device;
  /// nccl throws for a failed call at once and reports an order mismatch from a later
  /// begin_step (see nccl_communicator.hpp). Throws usage_error for anything but float32 sum.
  virtual void all_reduce(void* buffer, std::size_t count, data_type type, reduce_op op, StreamRef stream,
                          const collective_label& label) = 0;

  /// What this rank issued in the current step, in order.
  [[nodiscard]] virtual const collective_sequence& issued() const = 0;

 protected:
  communicator() = default;
};

}  // namespace streamsafe::collectives
