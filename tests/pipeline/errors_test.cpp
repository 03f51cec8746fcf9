// Failures: each is reported with its batch and stage, the pipeline is drained and freed before
// the error reaches the caller, no thread is left behind, and the next run works.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "backends.hpp"
#include "ring_pipeline.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe::testing {

namespace {

constexpr std::size_t batches = 8;

std::size_t thread_count() {
  std::size_t threads = 0;
  DIR* tasks = opendir("/proc/self/task");
  while (const dirent* entry = readdir(tasks)) threads += entry->d_name[0] != '.';
  closedir(tasks);
  return threads;
}

/// The threads once those already joined are gone: a joined thread can still be listed in
/// /proc for a moment (its joiner is woken before the kernel has reaped it), longer on a loaded
/// machine. Waits, up to two seconds, for the count to reach `at_most`; a thread really left
/// behind stays.
std::size_t threads_once_reaped(std::size_t at_most) {
  std::size_t now = thread_count();
  for (int tries = 0; tries < 200 && now > at_most; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    now = thread_count();
  }
  return now;
}

class PipelineErrors : public BackendTest {
 protected:
  // Runs a ring that fails as `options` says; returns the error, after checking the teardown.
  pipeline::pipeline_error fail(const ring_options& options) {
    caching_allocator allocator(device());
    ring_observations seen(batches);
    pipeline::pipeline ring(device(), allocator, ring_spec(options, seen));
    (void)ring.run(2);  // the streams' threads (threaded sim) exist from here on
    // The fewest seen for a moment: the first run's joined producers may still be listed.
    std::size_t threads = thread_count();
    for (int tries = 0; tries < 20; ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      threads = std::min(threads, thread_count());
    }
    std::optional<pipeline::pipeline_error> caught;
    try {
      (void)ring.run(batches);
    } catch (const pipeline::pipeline_error& e) {
      caught = e;
    }
    EXPECT_TRUE(caught.has_value()) << "the run did not fail";
    EXPECT_EQ(allocator.stats().allocation.current, 0) << "a failed run left device buffers allocated";
    EXPECT_LE(threads_once_reaped(threads), threads) << "a failed run left host threads behind";
    ring_options healthy = options;
    healthy.scale_throws_at.reset();
    healthy.producer_throws_at.reset();
    ring_observations again(batches);
    pipeline::pipeline restarted(device(), allocator, ring_spec(healthy, again));
    (void)restarted.run(batches);
    for (std::size_t b = 0; b < batches; ++b) EXPECT_EQ(again.results[b], 2 * batch_value(b)) << "batch " << b;
    return caught.value_or(pipeline::pipeline_error(0, "none", nullptr));
  }
};

TEST_P(PipelineErrors, AStageBodysExceptionNamesTheBatchAndTheStage) {
  const pipeline::pipeline_error e = fail({.upload = sim_pacing::starved, .scale_throws_at = 5});
  EXPECT_EQ(e.batch(), 5u);
  EXPECT_EQ(e.stage(), "scale");
  EXPECT_THAT(e.what(), ::testing::HasSubstr("batch 5, stage 'scale': scale failed on purpose"));
}

TEST_P(PipelineErrors, AProducersExceptionNamesTheBatch) {
  const pipeline::pipeline_error e = fail({.download = sim_pacing::starved, .producer_throws_at = 3});
  EXPECT_EQ(e.batch(), 3u);
  EXPECT_EQ(e.stage(), "producer");
}

TEST_P(PipelineErrors, TheSamePipelineRunsAgainAfterAFailure) {
  caching_allocator allocator(device());
  ring_options options{.scale_throws_at = 4};
  ring_observations seen(batches);
  pipeline::pipeline ring(device(), allocator, ring_spec(options, seen));
  EXPECT_THROW((void)ring.run(batches), pipeline::pipeline_error);
  options.scale_throws_at.reset();
  (void)ring.run(batches);
  for (std::size_t b = 0; b < batches; ++b) EXPECT_EQ(seen.results[b], 2 * batch_value(b));
}

TEST_P(PipelineErrors, ACudaErrorKeepsItsTypeAsTheCause) {
  caching_allocator allocator(device());
  ring_observations seen(batches);
  const ring_options options;
  pipeline::pipeline_spec spec = ring_spec(options, seen);
  spec.stages[1].body = [](pipeline::stage_context& ctx) {
    if (ctx.batch() == 2) throw cuda_error("cudaLaunchKernel(scale): an illegal memory access", 700);
  };
  pipeline::pipeline ring(device(), allocator, std::move(spec));
  try {
    (void)ring.run(batches);
    FAIL() << "no error";
  } catch (const pipeline::pipeline_error& e) {
    EXPECT_EQ(e.batch(), 2u);
    EXPECT_EQ(e.stage(), "scale");
    EXPECT_THROW(std::rethrow_exception(e.cause()), cuda_error);
  }
}

TEST_P(PipelineErrors, AnUndeclaredBufferNameIsRefusedWithTheStage) {
  caching_allocator allocator(device());
  ring_observations seen(batches);
  const ring_options options;
  pipeline::pipeline_spec spec = ring_spec(options, seen);
  spec.stages[2].body = [](pipeline::stage_context& ctx) { ctx.copy("result", "raw"); };
  pipeline::pipeline ring(device(), allocator, std::move(spec));
  try {
    (void)ring.run(batches);
    FAIL() << "no error";
  } catch (const pipeline::pipeline_error& e) {
    EXPECT_EQ(e.stage(), "download");
    EXPECT_THAT(e.what(), ::testing::HasSubstr("buffer 'raw' is not among the stage's inputs or outputs"));
  }
}

STREAMSAFE_ALL_BACKENDS(PipelineErrors);

// Declarations the pipeline cannot order are refused when it is built.
class PipelineValidation : public ::testing::Test {
 protected:
  void expect_refused(pipeline::pipeline_spec spec, const std::string& why) {
    Device device = Device::sim();
    caching_allocator allocator(device);
    try {
      pipeline::pipeline refused(device, allocator, std::move(spec));
      FAIL() << "accepted";
    } catch (const usage_error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(why));
    }
  }
  ring_observations seen{1};
  ring_options defaults;
};

TEST_F(PipelineValidation, AnInputNobodyWrites) {
  pipeline::pipeline_spec spec = ring_spec(defaults, seen);
  spec.stages[1].inputs.push_back("weights");
  expect_refused(std::move(spec), "stage 'scale': reads 'weights', which no stage writes");
}

TEST_F(PipelineValidation, AnInputOfALaterStage) {
  pipeline::pipeline_spec spec = ring_spec(defaults, seen);
  spec.stages[0].inputs.push_back("scaled");
  expect_refused(std::move(spec), "stage 'upload': reads 'scaled', written by a later stage");
}

TEST_F(PipelineValidation, TwoWriters) {
  pipeline::pipeline_spec spec = ring_spec(defaults, seen);
  spec.stages[2].outputs.push_back({.name = "raw", .bytes = 64});
  expect_refused(std::move(spec), "buffer 'raw' has two writers");
}

TEST_F(PipelineValidation, AStepStageThatIsNotLast) {
  pipeline::pipeline_spec spec = ring_spec(defaults, seen);
  spec.stages[1].step = true;
  expect_refused(std::move(spec), "the step stage must be the last stage");
}

TEST_F(PipelineValidation, AWaitForASignalNobodyPublishes) {
  pipeline::pipeline_spec spec = ring_spec(defaults, seen);
  spec.stages[2].waits_for.push_back("bucket0");
  expect_refused(std::move(spec), "waits for 'bucket0', which no earlier stage publishes");
}

}  // namespace

}  // namespace streamsafe::testing
