// The order check and the rendezvous timeout on sim: a rank that issues its buckets in another
// order, or stops issuing them, ends every rank's step with an error instead of a hang.
#include <gtest/gtest.h>
#include <gmock/gmock.h>


#include "rank_setup.hpp"

namespace streamsafe::collectives::testing {
namespace {

using ::testing::HasSubstr;

class SimOrderCheck : public RankModeTest {};

TEST_P(SimOrderCheck, RankWithAnotherBucketOrderIsReportedWithBothSequences) {
  const auto grads = model_gradients();
  const bucket_plan plan(grads, kSmallCap);
  const auto& b = plan.buckets();
  const auto failures = run_ranks(ranks(), mode(), {}, [&](int rank, Device& device, communicator& comm) {
    rank_setup setup(device, comm, plan);
    setup.reducer.begin_step(0);
    setup.backward(plan, rank == 1 ? std::vector<std::uint32_t>{1, 0, 2, 3} : plan_order(plan), rank, 0);
    (void)setup.reduced(plan);
  });
  const std::string rank1 = "rank 1 issued [all_reduce bucket 1 '" + b[1].name + "' " + std::to_string(b[1].bytes) + " B]";
  const std::string rank0 = "rank 0 issued [all_reduce bucket 0 '" + b[0].name + "' " + std::to_string(b[0].bytes) + " B]";
  for (int r = 0; r < ranks(); ++r) {
    const auto& failure = failures[static_cast<std::size_t>(r)];
    EXPECT_THAT(failure, HasSubstr("collective order mismatch in step 0: " + rank1 + " but " + rank0)) << "rank " << r;
  }
}

TEST_P(SimOrderCheck, RankThatStopsEndsTheCollectiveWithAnErrorNamingIt) {
  const auto grads = model_gradients();
  const bucket_plan plan(grads, kSmallCap);
  const auto failures = run_ranks(ranks(), mode(), {.timeout = std::chrono::milliseconds(300)},
                                  [&](int rank, Device& device, communicator& comm) {
                                    rank_setup setup(device, comm, plan);
                                    setup.reducer.begin_step(0);
                                    setup.backward(plan, rank == 1 ? std::vector<std::uint32_t>{0, 1} : plan_order(plan),
                                                   rank, 0);
                                    (void)setup.reduced(plan);
                                  });
  EXPECT_EQ(failures[1], "");  // its own collectives all met the others
  for (int r = 0; r < ranks(); ++r) {
    if (r == 1) continue;
    const auto& failure = failures[static_cast<std::size_t>(r)];
    EXPECT_THAT(failure, HasSubstr("sim all_reduce '" + plan.buckets()[2].name + "' (bucket 2, collective 2, step 0"))
        << "rank " << r;
    EXPECT_THAT(failure, HasSubstr("rank 1 did not arrive within 300 ms")) << "rank " << r;
  }
}

TEST_P(SimOrderCheck, SecondStepComparesOnlyThatStep) {
  const auto grads = model_gradients();
  const bucket_plan plan(grads, kSmallCap);
  const auto failures = run_ranks(ranks(), mode(), {}, [&](int rank, Device& device, communicator& comm) {
    rank_setup setup(device, comm, plan);
    for (std::uint64_t step = 0; step < 2; ++step) {
      setup.reducer.begin_step(step);
      const bool swap = rank == ranks() - 1 && step == 1;
      setup.backward(plan, swap ? std::vector<std::uint32_t>{0, 1, 3, 2} : plan_order(plan), rank, step);
      (void)setup.reduced(plan);
    }
  });
  for (const auto& failure : failures) {
    EXPECT_THAT(failure, HasSubstr("collective order mismatch in step 1: rank " + std::to_string(ranks() - 1) +
                                   " issued [all_reduce bucket 0"));
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, SimOrderCheck, rank_modes(), rank_mode_name);

// Deterministic sim runs ops on the host thread that waits: ranks driven from one thread cannot
// meet. The documented outcome is the timeout error, then the aborted group, never a hang.
TEST(SimOrderCheckOneThread, DeterministicRanksOnOneHostThreadTimeOutInsteadOfHanging) {
  const auto grads = model_gradients();
  const bucket_plan plan(grads, kSmallCap);
  auto group = std::make_shared<sim_group>(2, sim_group_options{.timeout = std::chrono::milliseconds(200)});
  Device device0 = Device::sim();
  Device device1 = Device::sim();
  sim_communicator comm0(group, 0);
  sim_communicator comm1(group, 1);
  rank_setup rank0(device0, comm0, plan);
  rank_setup rank1(device1, comm1, plan);
  rank0.backward(plan, {0}, 0, 0);
  rank1.backward(plan, {0}, 1, 0);
  try {
    (void)rank0.reduced(plan);
    FAIL() << "rank 0's all-reduce returned without rank 1";
  } catch (const error& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 1 did not arrive within 200 ms"));
  }
  try {
    (void)rank1.reduced(plan);
    FAIL() << "rank 1's all-reduce ran in an aborted group";
  } catch (const error& e) {
    EXPECT_THAT(e.what(), HasSubstr("group aborted earlier: sim all_reduce"));
  }
  EXPECT_THAT(group->abort_reason(), HasSubstr("did not arrive"));
}

}  // namespace
}  // namespace streamsafe::collectives::testing
