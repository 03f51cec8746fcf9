// The sync stage on 2 and 4 sim ranks (one device and host thread each): every rank's step reads
// the sum over the ranks with the producing or the comm stream starved, the buckets are reduced
// in the plan's order and while later buckets' backward is still queued, and a rank whose
// collective order differs ends every rank's run with both sequences instead of a hang.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "streamsafe/hazard/hazard.hpp"
#include "streamsafe/hazard/report_text.hpp"
#include "streamsafe/hazard/tracker.hpp"
#include "sync_ranks.hpp"

namespace streamsafe::testing {

namespace {

using collectives::bucket_plan;
using collectives::testing::gradient_indices;
using collectives::testing::kSmallCap;
using collectives::testing::model_gradients;
using collectives::testing::run_ranks;
using ::testing::HasSubstr;

class PipelineSync : public collectives::testing::RankModeTest {
 protected:
  // Runs every rank with `options`; returns each rank's result, failing the test on any error.
  std::vector<rank_result> run_all(const bucket_plan& plan, const sync_options& options) {
    std::vector<rank_result> results(static_cast<std::size_t>(ranks()));
    const auto failures = run_ranks(ranks(), mode(), {}, [&](int rank, Device& device, collectives::communicator& comm) {
      results[static_cast<std::size_t>(rank)] = run_sync_rank(device, comm, plan, ranks(), options);
    });
    for (const std::string& failure : failures) EXPECT_EQ(failure, "");
    return results;
  }
  void expect_sums(const bucket_plan& plan, const sync_options& options) {
    const std::vector<rank_result> results = run_all(plan, options);
    const std::vector<std::size_t> indices = gradient_indices(plan);
    for (std::size_t r = 0; r < results.size(); ++r) {
      for (std::size_t b = 0; b < options.batches; ++b) EXPECT_EQ(results[r].wrong_sums[b], 0u) << "rank " << r << ", batch " << b;
      ASSERT_EQ(results[r].weights.size(), indices.size()) << "rank " << r;
      for (std::size_t k = 0; k < indices.size(); ++k) {
        ASSERT_EQ(results[r].weights[k], expected_weight(ranks(), indices[k], options.batches)) << "rank " << r << ", " << k;
      }
      EXPECT_EQ(results[r].weights, results[0].weights) << "rank " << r;
      EXPECT_EQ(results[r].loop_allocations, 0u) << "rank " << r;
    }
  }
};

// backward starved: a comm stream that did not wait for the bucket's signal sums stale bytes.
TEST_P(PipelineSync, TheCommStageReducesEachBucketAfterItsProducerWroteIt) {
  const bucket_plan plan(model_gradients(), kSmallCap);
  expect_sums(plan, {.backward = sim_pacing::starved});
}

// sync starved: a step that did not wait for the comm stage reads one rank's gradients.
TEST_P(PipelineSync, TheStepReadsTheSumsOfTheLastReduce) {
  const bucket_plan plan(model_gradients(), kSmallCap);
  expect_sums(plan, {.sync = sim_pacing::starved});
}

// Every rank's communicator saw the plan's buckets in the plan's order, every batch.
TEST_P(PipelineSync, BucketsAreReducedInThePlansOrder) {
  const bucket_plan plan(model_gradients(), kSmallCap);
  ASSERT_GT(plan.buckets().size(), 2u);
  const sync_options options{.backward = sim_pacing::starved, .batches = 3};
  for (const rank_result& result : run_all(plan, options)) {
    for (std::size_t b = 0; b < options.batches; ++b) {
      for (std::size_t k = 0; k + 1 < plan.buckets().size(); ++k) {
        const std::string batch = "batch " + std::to_string(b);
        EXPECT_LT(std::find(result.order.begin(), result.order.end(), batch + " reduced " + std::to_string(k)),
                  std::find(result.order.begin(), result.order.end(), batch + " reduced " + std::to_string(k + 1)))
            << batch << ", bucket " << k;
      }
    }
  }
}

// Overlap by order: bucket 0's all-reduce has finished before bucket 1's backward runs. Threaded:
// bucket 1's backward waits at a gate that only bucket 0's reduction opens, so a comm stage that
// waited for the whole of backward would leave it shut. Deterministic: backward is starved, so
// the scheduler runs the reduction first whenever the wait allows it.
TEST_P(PipelineSync, TheFirstBucketIsReducedWhileLaterBucketsAreStillQueued) {
  const bucket_plan plan(model_gradients(), kSmallCap);
  const bool threaded = mode() == sim_mode::threaded;
  const sync_options options{.backward = threaded ? sim_pacing::normal : sim_pacing::starved,
                             .batches = 3,
                             .gate_after_bucket0 = threaded};
  for (const rank_result& result : run_all(plan, options)) {
    EXPECT_FALSE(result.gate_gave_up);
    const auto at = [&](const std::string& what) { return std::find(result.order.begin(), result.order.end(), what); };
    EXPECT_LT(at("batch 0 reduced 0"), at("batch 0 backward 1")) << ::testing::PrintToString(result.order);
    EXPECT_NE(at("batch 0 backward 1"), result.order.end());
  }
}

// Rank 1 lists its parameters in another order, so its plan (and its first collective) differs:
// every rank's run ends with a pipeline_error (batch 0, raised at the fence that saw the failed
// collective) naming the comm stream and carrying both sequences.
TEST_P(PipelineSync, ARankWithAnotherCollectiveOrderIsReportedWithBothSequences) {
  const std::vector<collectives::gradient> grads = model_gradients();
  const std::vector<collectives::gradient> reversed(grads.rbegin(), grads.rend());
  const bucket_plan plan(grads, kSmallCap);
  const bucket_plan other(reversed, kSmallCap);
  const auto describe_first = [](int rank, const bucket_plan& p) {
    const collectives::bucket& b = p.buckets()[0];
    return "rank " + std::to_string(rank) + " issued [all_reduce bucket 0 '" + b.name + "' " + std::to_string(b.bytes) + " B]";
  };
  std::vector<std::string> stages(static_cast<std::size_t>(ranks()));
  const auto failures = run_ranks(ranks(), mode(), {}, [&](int rank, Device& device, collectives::communicator& comm) {
    try {
      (void)run_sync_rank(device, comm, rank == 1 ? other : plan, ranks(), {.batches = 3});
    } catch (const pipeline::pipeline_error& e) {
      stages[static_cast<std::size_t>(rank)] = e.stage();
      throw;
    }
  });
  for (int r = 0; r < ranks(); ++r) {
    const std::string& failure = failures[static_cast<std::size_t>(r)];
    EXPECT_THAT(failure, HasSubstr("collective order mismatch in step 0: " + describe_first(1, other) + " but " +
                                   describe_first(0, plan)))
        << "rank " << r;
    EXPECT_FALSE(stages[static_cast<std::size_t>(r)].empty()) << "rank " << r << ": " << failure;
    EXPECT_THAT(failure, HasSubstr("on stream 'sync' failed")) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, PipelineSync, collectives::testing::rank_modes(), collectives::testing::rank_mode_name);

// The hazards found, informational ones (a wait the engine sees is implied) left out.
std::string described(const std::vector<hazard::hazard>& found) {
  std::string text;
  for (const hazard::hazard& h : found) {
    if (!hazard::is_informational(h.kind)) text += hazard::describe(h) + "\n";
  }
  return text;
}

// Under the hazard engine, every rank's run has no hazard and needs no insertion. (The step's
// wait for backward's end is informational here: backward's last op is its last publish, which
// the comm stage already waited for.)
class PipelineSyncHazards : public ::testing::TestWithParam<hazard::policy> {};

TEST_P(PipelineSyncHazards, TwoRanksHaveNoHazardAndNeedNoInsertion) {
  const bucket_plan plan(model_gradients(), kSmallCap);
  for (const sim_mode mode : {sim_mode::deterministic, sim_mode::threaded}) {
    std::vector<std::string> found(2);
    std::vector<std::uint64_t> inserted(2, 0);
    const auto failures = run_ranks(2, mode, {}, [&](int rank, Device& device, collectives::communicator& comm) {
      hazard::tracker hazards(device, GetParam());
      (void)run_sync_rank(device, comm, plan, 2, {.backward = sim_pacing::starved}, &hazards);
      found[static_cast<std::size_t>(rank)] = described(hazards.hazards());
      inserted[static_cast<std::size_t>(rank)] = hazards.inserted().total();
    });
    for (std::size_t r = 0; r < 2; ++r) {
      EXPECT_EQ(failures[r], "");
      EXPECT_EQ(found[r], "") << "rank " << r;
      EXPECT_EQ(inserted[r], 0u) << "rank " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, PipelineSyncHazards, ::testing::Values(hazard::policy::report, hazard::policy::enforce));

}  // namespace

}  // namespace streamsafe::testing
