// The pipeline's hand-offs on every backend: each test starves the stream that would lose the
// race if the pipeline left out one of its orderings, then checks the bytes each batch saw.
#include <gtest/gtest.h>

#include "backends.hpp"
#include "ring_pipeline.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe::testing {

namespace {

constexpr std::size_t batches = 12;

class PipelineOrdering : public BackendTest {
 protected:
  // Runs the ring with `options` and checks what every batch saw. Sim kernels look at their
  // bytes; on cuda only the results can be read.
  void run_and_check(const ring_options& options) {
    caching_allocator allocator(device());
    ring_observations seen(batches);
    pipeline::pipeline ring(device(), allocator, ring_spec(options, seen));
    const pipeline::run_stats stats = ring.run(batches);
    EXPECT_EQ(stats.batches, batches);
    for (std::size_t b = 0; b < batches; ++b) {
      if (GetParam() != test_backend::cuda) EXPECT_EQ(seen.seen[b], batch_value(b)) << "batch " << b;
      if (options.results) EXPECT_EQ(seen.results[b], 2 * batch_value(b)) << "batch " << b;
    }
    last_stats = stats;
  }
  pipeline::run_stats last_stats;
};

// upload starved: without the upload -> scale edge, scale reads raw before the copy lands.
TEST_P(PipelineOrdering, ConsumerWaitsForTheProducersEdge) {
  run_and_check({.upload = sim_pacing::starved});
}

// scale starved, no results (nothing on the host waits for scale): without the slot fence, the
// upload of batch b + depth rewrites raw before scale of batch b read it.
TEST_P(PipelineOrdering, SlotFenceHoldsTheRewriteUntilTheReadersSignalled) {
  run_and_check({.scale = sim_pacing::starved, .results = false});
  run_and_check({.depth = 3, .scale = sim_pacing::starved, .results = false});
}

// upload starved, no results: without the producer's fence, the host refills a staging slot
// whose upload has not run yet.
TEST_P(PipelineOrdering, ProducerNeverWritesASlotStillUploading) {
  run_and_check({.upload = sim_pacing::starved, .results = false});
}

// download starved: without the host's fence, on_result reads the pinned result before the copy.
TEST_P(PipelineOrdering, ResultsAreReadOnlyAfterTheSlotsFence) {
  run_and_check({.download = sim_pacing::starved});
}

TEST_P(PipelineOrdering, ResultsComeInBatchOrder) {
  caching_allocator allocator(device());
  ring_options options{.depth = 3};
  ring_observations seen(batches);
  pipeline::pipeline ring(device(), allocator, ring_spec(options, seen));
  (void)ring.run(batches);
  ASSERT_EQ(seen.result_order.size(), batches);
  for (std::size_t b = 0; b < batches; ++b) EXPECT_EQ(seen.result_order[b], b);
}

TEST_P(PipelineOrdering, TheLoopAllocatesNothingCreatesNoEventAndSyncsOnlyAtFences) {
  run_and_check({});
  EXPECT_EQ(last_stats.loop_allocations, 0u);
  EXPECT_EQ(last_stats.loop_frees, 0u);
  EXPECT_EQ(last_stats.loop_events_created, 0u);
  EXPECT_EQ(last_stats.loop_host_syncs, 0u);
  EXPECT_GT(last_stats.events, 0u);
  // one producer fence per batch after the first lap, one result fence per batch
  EXPECT_EQ(last_stats.fence_waits, (batches - 2) + batches);
}

TEST_P(PipelineOrdering, AloneModeSynchronizesEachStageAndCountsIt) {
  caching_allocator allocator(device());
  ring_options options;
  ring_observations seen(batches);
  pipeline::pipeline ring(device(), allocator, ring_spec(options, seen));
  const pipeline::run_stats stats = ring.run(batches, pipeline::run_mode::alone);
  EXPECT_EQ(stats.requested_host_syncs, 3 * batches);
  EXPECT_EQ(stats.loop_host_syncs, 3 * batches);
  for (std::size_t b = 0; b < batches; ++b) EXPECT_EQ(seen.results[b], 2 * batch_value(b));
}

TEST_P(PipelineOrdering, EverythingIsFreedAfterTheRunAndASecondRunWorks) {
  caching_allocator allocator(device());
  ring_options options{.upload = sim_pacing::starved};
  ring_observations seen(batches);
  pipeline::pipeline ring(device(), allocator, ring_spec(options, seen));
  (void)ring.run(batches);
  EXPECT_EQ(allocator.stats().allocation.current, 0);
  const std::size_t events = ring.run(batches).events;
  EXPECT_EQ(allocator.stats().allocation.current, 0);
  EXPECT_GT(events, 0u);
  for (std::size_t b = 0; b < batches; ++b) EXPECT_EQ(seen.results[b], 2 * batch_value(b));
}

STREAMSAFE_ALL_BACKENDS(PipelineOrdering);

}  // namespace

}  // namespace streamsafe::testing
