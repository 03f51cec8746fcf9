// The sync stage of a pipeline: gradient buckets all-reduced on a comm stream of their own as the
// stage that computes them publishes each one, and the step stage ordered after the last
// all-reduce by the pipeline (docs/pipeline.md, "The sync stage").
//
// Declaring it. The stage that writes the gradients (one per-slot output holding the plan's flat
// buffer) lists bucket_signals(sync) in its `publishes` and calls publish_bucket(ctx, sync, id)
// once bucket `id`'s gradients are enqueued, in the plan's order (bucket 0 first: backward
// writes the last parameters first). sync_stage(sync) is the comm stage: put it after that stage
// and before the step stage.
// Ordering. For each bucket, in the plan's order, the comm stream waits for that bucket's signal
// only and all-reduces the bucket in place (stage_context::all_reduce), so bucket k's reduction
// overlaps the publisher's work on bucket k+1 and later. The step stage waits for the comm
// stage's end in its slot, as for every stage before it: it reads the sums, and the user writes
// no wait. The slot fence keeps the publisher from rewriting a slot's gradients until the comm
// stage's use of that slot is done. One pooled event per slot and bucket, created at setup.
// Lifetime. The plan and the communicator are borrowed: both must outlive every run of the
// pipeline. Threads. The comm stage's body runs on the pipeline's thread (its run() caller), so
// the communicator belongs to that thread (one rank per pipeline; several ranks in one process
// need one pipeline and one host thread each, as sim_communicator.hpp says).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "streamsafe/pipeline/collectives/bucket_plan.hpp"
#include "streamsafe/pipeline/collectives/communicator.hpp"
#include "streamsafe/pipeline/stage.hpp"
#include "streamsafe/pipeline/stage_context.hpp"

namespace streamsafe::collectives {

struct sync_spec {
  std::string name = "sync";  ///< the comm stage's (and its stream's) name
  /// The per-slot output of the publishing stage that holds every bucket (plan->total_bytes()).
  std::string gradients;
  const bucket_plan* plan = nullptr;
  communicator* comm = nullptr;
  /// The comm stream's options (sim pacing for tests); an empty name is replaced by `name`.
  stream_options stream;
};

/// The signal that says bucket `id` of `sync.gradients` is written: "<gradients>.bucket<id>".
[[nodiscard]] std::string bucket_signal(const sync_spec& sync, std::uint32_t id);

/// One signal per bucket, each covering `sync.gradients`: the publishing stage's `publishes`.
/// Throws usage_error when the spec lacks a plan, a communicator or a gradient buffer.
[[nodiscard]] std::vector<pipeline::signal_spec> bucket_signals(const sync_spec& sync);

/// In the publishing stage's body: bucket `id`'s gradients are in the work enqueued so far.
void publish_bucket(pipeline::stage_context& ctx, const sync_spec& sync, std::uint32_t id);

/// The comm stage (resource network): at each batch it starts the communicator's step (the order
/// check compares each batch's collectives across ranks), then all-reduces every bucket in the
/// plan's order, each after its own signal. A rank whose order differs ends the run with a
/// pipeline_error carrying the batch and the communicator's text (both sequences): on sim the
/// collective fails as a kernel of the comm stream, so the error names that stream and is raised
/// by the first fence that sees it (the stage it names may be a later one, such as the step).
[[nodiscard]] pipeline::stage_spec sync_stage(const sync_spec& sync);

}  // namespace streamsafe::collectives
