// Intra-step signals and the step stage: the sync stage reads a gradient bucket as soon as the
// compute stage publishes it, and the next batch's compute reads the weights the step wrote.
#include <gtest/gtest.h>

#include "backends.hpp"
#include "ring_pipeline.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe::testing {

namespace {

constexpr std::size_t batches = 10;

class PipelineTraining : public BackendTest {
 protected:
  training_observations run_training(const training_options& options) {
    caching_allocator allocator(device());
    training_observations seen(batches);
    pipeline::pipeline training(device(), allocator, training_spec(options, seen));
    const pipeline::run_stats stats = training.run(batches);
    EXPECT_EQ(stats.loop_allocations, 0u);
    EXPECT_EQ(stats.loop_host_syncs, 0u);
    return seen;
  }
  void SetUp() override {
    BackendTest::SetUp();
    if (GetParam() == test_backend::cuda) GTEST_SKIP() << "the training kernels are sim-only (they read their bytes)";
  }
};

// compute starved: without the wait on the signal, sync reduces grad0 before compute wrote it.
TEST_P(PipelineTraining, ASignalOrdersTheBucketItCovers) {
  const training_observations seen = run_training({.compute = sim_pacing::starved});
  for (std::size_t b = 1; b < batches; ++b) {
    EXPECT_EQ(seen.grad0[b], batch_value(b) + static_cast<std::uint32_t>(b)) << "batch " << b;
  }
}

// step starved: without the wait on the previous step, compute reads last-but-one's weights;
// without the wait on the step's initialize, batch 0 reads weights never written.
TEST_P(PipelineTraining, ComputeReadsTheWeightsOfThePreviousStep) {
  const training_observations seen = run_training({.step = sim_pacing::starved});
  EXPECT_EQ(seen.weights[0], initial_weight);
  for (std::size_t b = 1; b < batches; ++b) EXPECT_EQ(seen.weights[b], static_cast<std::uint32_t>(b)) << "batch " << b;
}

// sync stands for a slow all-reduce: the step stage must see both reduced buckets of its batch.
TEST_P(PipelineTraining, TheStepRunsAfterEveryStageOfItsSlot) {
  const training_observations seen = run_training({.compute = sim_pacing::starved});
  for (std::size_t b = 1; b < batches; ++b) {
    EXPECT_EQ(seen.reduced[b], batch_value(b) + static_cast<std::uint32_t>(b)) << "batch " << b;
  }
}

// The step stage reads nothing of "metrics" (starved), yet runs after it: the step follows every
// stage of its slot, not only those it reads.
TEST_P(PipelineTraining, TheStepFollowsAStageItDoesNotRead) {
  std::vector<std::uint32_t> metrics_done(batches, 0);
  std::vector<std::uint32_t> step_saw(batches, 0);
  pipeline::pipeline_spec spec;
  spec.stages.push_back({.name = "metrics",
                         .outputs = {{.name = "metrics", .bytes = 64}},
                         .body =
                             [&](pipeline::stage_context& ctx) {
                               kernel note{.name = "metrics", .sim = [&, b = ctx.batch()] { metrics_done[b] = 1; }};
                               ctx.launch(note, {}, {ctx.buffer("metrics")});
                             },
                         .stream = {.pacing = sim_pacing::starved}});
  spec.stages.push_back({.name = "step",
                         .outputs = {{.name = "weights", .bytes = 64, .scope = pipeline::buffer_scope::shared}},
                         .body =
                             [&](pipeline::stage_context& ctx) {
                               kernel look{.name = "sgd", .sim = [&, b = ctx.batch()] { step_saw[b] = metrics_done[b]; }};
                               ctx.launch(look, {}, {ctx.buffer("weights")});
                             },
                         .step = true});
  caching_allocator allocator(device());
  pipeline::pipeline steps(device(), allocator, std::move(spec));
  (void)steps.run(batches);
  for (std::size_t b = 0; b < batches; ++b) EXPECT_EQ(step_saw[b], 1u) << "batch " << b;
}

STREAMSAFE_ALL_BACKENDS(PipelineTraining);

}  // namespace

}  // namespace streamsafe::testing
