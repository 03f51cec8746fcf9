// The loader's pinned batches for the training loops written by hand: `slots` pinned buffers
// used in turn, filled by the host thread that runs the loop (as a framework's loader hands it
// pinned batches). A slot's first use fills it whole; later batches rewrite each image's first
// row only, so the host stays off the critical path, as the pipeline's producer does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "loop_ops.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/event.hpp"
#include "training_kernels.hpp"

namespace streamsafe::demo {

class staging_ring {
 public:
  /// fenced: before rewriting a slot the host waits for the copy that last read it (a query
  /// first, so only a wait that blocks is a host sync); not fenced: the host writes at once,
  /// racing that copy, as a loop that reuses one pinned buffer does.
  staging_ring(const Device& device, loop_ops& ops, image_shape shape, std::size_t slots, bool fenced);
  /// Synchronizes the device, then frees the slots.
  ~staging_ring();
  staging_ring(const staging_ring&) = delete;
  staging_ring& operator=(const staging_ring&) = delete;

  /// Fills `batch`'s slot on the calling thread and returns it.
  [[nodiscard]] const std::uint8_t* fill(std::size_t batch);
  /// The copy that reads `batch`'s slot was enqueued on `stream`: the slot's next fill waits for it.
  void copied(std::size_t batch, StreamRef stream);
  /// Fills that found their slot's copy unfinished and blocked the host (fenced only).
  [[nodiscard]] std::uint64_t blocked_waits() const { return blocked_waits_; }

 private:
  Device device_;
  loop_ops& ops_;
  image_shape shape_;
  bool fenced_;
  std::vector<std::uint8_t*> slots_;
  std::vector<Event> read_;       // per slot: recorded after the copy that reads it
  std::vector<bool> filled_;      // per slot: filled whole once
  std::uint64_t blocked_waits_ = 0;
};

}  // namespace streamsafe::demo
