// What a pipeline is made of: named stages, each on its own stream, and the buffers they declare.
// A declaration is what lets the pipeline order every hand-off itself: a stage touches only what
// it declared, and the pipeline knows from the declarations who writes and who reads each buffer.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "streamsafe/stream.hpp"

namespace streamsafe::pipeline {

class stage_context;

/// Where a buffer lives. Device memory comes from the caching allocator, pinned host memory from
/// Device::allocate_pinned; both at setup, never in the loop.
enum class memory_place { device, pinned };

/// How many copies of a buffer exist. per_slot: one per ring slot, so batch i+1 fills its copy
/// while batch i's is still read. shared: one for the whole run (weights): its writer must come
/// after all its readers in stage order, and batch i's readers see batch i-1's write.
enum class buffer_scope { per_slot, shared };

struct buffer_spec {
  std::string name;  ///< unique in the pipeline
  std::size_t bytes = 0;
  memory_place place = memory_place::device;
  buffer_scope scope = buffer_scope::per_slot;
};

/// The hardware a stage occupies, for the bound (bound.hpp): copies run on the copy engines (one
/// per direction), kernels on the SMs, collectives on the network.
enum class stage_resource { copy_h2d, copy_d2h, compute, network };

/// An intra-step signal: its stage publishes it mid-body (stage_context::publish) once the listed
/// outputs of the batch are written; a later stage that waits for it may read those buffers before
/// the publisher's body ends (a comm stage all-reducing bucket k while backward computes k+1).
struct signal_spec {
  std::string name;  ///< unique in the pipeline
  std::vector<std::string> buffers;  ///< outputs of the publishing stage that the signal covers
};

struct stage_spec {
  std::string name;  ///< unique; also the stage stream's name, so reports and traces carry it
  /// Buffers produced by earlier stages (or the staging buffer) that this stage reads.
  std::vector<std::string> inputs;
  /// Buffers this stage writes; it is their only writer. A pinned per-slot output is a result: the
  /// host reads it after the slot's fence (pipeline_spec::on_result).
  std::vector<buffer_spec> outputs;
  /// Intra-step signals this stage publishes, and those of earlier stages it waits for
  /// (stage_context::wait_for): a waited signal's buffers are readable by this stage, ordered by
  /// the signal, not by the publisher's end. One pooled event per slot and signal.
  std::vector<signal_spec> publishes;
  std::vector<std::string> waits_for;
  /// Enqueues the stage's work for one batch; runs on the pipeline's thread, in stage order.
  std::function<void(stage_context&)> body;
  /// Optional: enqueues work once per run, before the first batch (initial weights). It may touch
  /// only the stage's outputs (slot 0's copy of per-slot ones); readers of a shared output wait for
  /// it in batch 0, as they wait for the previous batch's write later.
  std::function<void(stage_context&)> initialize;
  stage_resource resource = stage_resource::compute;
  /// The step stage (an optimizer step): ordered after every other stage's work of the same slot.
  /// At most one, and it must be the last stage.
  bool step = false;
  /// The stage stream's options; an empty name is replaced by the stage's.
  stream_options stream;
};

}  // namespace streamsafe::pipeline
