// The sync stage's mechanism: each gradient bucket is all-reduced on a comm stream as soon as
// the stream producing it marks it ready, so the reduction of early buckets overlaps the rest
// of backward, and the optimizer's stream is ordered after the last reduction.
#pragma once

#include <cstdint>
#include <vector>

#include "streamsafe/event.hpp"
#include "streamsafe/pipeline/collectives/bucket_plan.hpp"
#include "streamsafe/pipeline/collectives/communicator.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::collectives {

/// Borrows the communicator, the plan, the flat gradient buffer (plan.total_bytes() bytes of
/// device memory) and the comm stream; all must outlive it. One event per bucket is created
/// here and recorded again every step: nothing is created or allocated per step. Not
/// thread-safe (the rank's host thread).
class bucket_reducer {
 public:
  bucket_reducer(communicator& comm, const bucket_plan& plan, void* gradients, StreamRef comm_stream);

  void begin_step(std::uint64_t step);
  /// The gradients of bucket `id` are complete in the work enqueued on `producer` so far: the
  /// comm stream waits for that work, then all-reduces the bucket. Buckets may be marked in
  /// any order; the collectives follow the order of these calls, which must be the same on
  /// every rank (the communicator's order check reports a difference).
  void bucket_ready(std::uint32_t id, StreamRef producer);
  /// Work enqueued on `consumer` after this call runs after every all-reduce issued so far.
  void order_after_reduce(StreamRef consumer);

  [[nodiscard]] StreamRef comm_stream() const { return comm_stream_; }

 private:
  communicator& comm_;
  const bucket_plan& plan_;
  char* gradients_;
  StreamRef comm_stream_;
  std::vector<Event> ready_;  // per bucket: the producer's work up to the bucket
  Event reduced_;             // the comm stream after the last issued all-reduce
};

}  // namespace streamsafe::collectives
