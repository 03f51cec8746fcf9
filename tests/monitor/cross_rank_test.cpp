// The figures across ranks on timelines worked out by hand: two ranks whose clocks differ by 10 ms,
// each the straggler of one step.
#include "streamsafe/monitor/cross_rank.hpp"

#include <gtest/gtest.h>

#include "trace_builder.hpp"

namespace streamsafe::monitor {
namespace {

using testing::trace_builder;

constexpr std::string_view all_reduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";

trace_builder& collective(trace_builder& b, double ts, double dur) {
  return b.op(op_kind::kernel, 9, ts, dur, all_reduce);
}

/// Rank 0 on its own clock: step 1 computes 0-400 and waits in its all-reduce from 500 for
/// rank 1; step 2 computes 1000-1500 and reaches its all-reduce last, at 1480.
trace rank0() {
  trace_builder b;
  b.marker("ProfilerStep#1", 0, 1000).marker("ProfilerStep#2", 1000, 1000);
  b.kernel(7, 0, 400).kernel(7, 1000, 500);
  collective(b, 500, 100);
  collective(b, 1480, 70);
  return b.build();
}

/// Rank 1, its clock 10,000 us ahead: step 1 computes until 550 (rank 0's time) and arrives
/// last; step 2 arrives at 1450 and waits for rank 0 until 1550.
trace rank1() {
  trace_builder b;
  b.marker("ProfilerStep#1", 10000, 1000).marker("ProfilerStep#2", 11000, 1000);
  b.kernel(7, 10000, 550).kernel(7, 11000, 400);
  collective(b, 10550, 50);
  collective(b, 11450, 100);
  return b.build();
}

struct two_ranks {
  explicit two_ranks(trace second = rank1()) : t1(std::move(second)) {}
  two_ranks(const two_ranks&) = delete;  // ranks refer to the members
  two_ranks& operator=(const two_ranks&) = delete;
  trace t0 = rank0();
  trace t1;
  analysis a0 = analyze(t0);
  analysis a1 = analyze(t1);
  std::vector<rank_report> ranks{{0, t0, a0}, {1, t1, a1}};
};

TEST(CrossRank, ClocksAlignOnTheEndsOfTheCollectives) {
  two_ranks run;
  const cross_rank_report across = analyze_ranks(run.ranks);
  EXPECT_EQ(across.alignment, clock_alignment::collectives);
  EXPECT_EQ(across.matched_collectives, 2u);
  ASSERT_EQ(across.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(across.ranks[0].offset_us, 0);
  EXPECT_DOUBLE_EQ(across.ranks[1].offset_us, -10000);
}

TEST(CrossRank, ExposedCommunicationIsWhatNoOtherWorkHid) {
  two_ranks run;
  const cross_rank_report across = analyze_ranks(run.ranks);
  // Rank 0: 100 + 70 us of all-reduce, 20 of them beside the compute that runs to 1500.
  EXPECT_DOUBLE_EQ(across.ranks[0].communication_us, 170);
  EXPECT_DOUBLE_EQ(across.ranks[0].exposed_communication_us, 150);
  // Rank 1: 50 + 100 us, none of it beside compute.
  EXPECT_DOUBLE_EQ(across.ranks[1].communication_us, 150);
  EXPECT_DOUBLE_EQ(across.ranks[1].exposed_communication_us, 150);
  EXPECT_EQ(across.ranks[1].collectives, 2u);
}

TEST(CrossRank, TheStragglerOfEachStepIsTheLastToReachItsCollective) {
  two_ranks run;
  const cross_rank_report across = analyze_ranks(run.ranks);
  ASSERT_EQ(across.steps.size(), 2u);
  EXPECT_EQ(across.steps[0].straggler, 1u);
  EXPECT_DOUBLE_EQ(across.steps[0].straggler_lead_us, 50);
  EXPECT_EQ(across.steps[1].straggler, 0u);
  EXPECT_DOUBLE_EQ(across.steps[1].straggler_lead_us, 30);
  ASSERT_EQ(across.steps[0].arrivals.size(), 2u);
  EXPECT_DOUBLE_EQ(across.steps[0].arrivals[1].arrival_us, 550);  // on rank 0's time line
}

TEST(CrossRank, WithoutACollectiveOnSomeRankTheWritersClocksAreKept) {
  two_ranks run;
  trace quiet = trace_builder().marker("ProfilerStep#1", 0, 1000).kernel(7, 0, 400).build();
  const analysis quiet_result = analyze(quiet);
  const std::vector<rank_report> ranks{run.ranks[0], {1, quiet, quiet_result}};
  const cross_rank_report across = analyze_ranks(ranks);
  EXPECT_EQ(across.alignment, clock_alignment::writer_clocks);
  EXPECT_DOUBLE_EQ(across.ranks[1].offset_us, 0);
  EXPECT_TRUE(across.steps.empty()) << "a step needs a collective on two ranks";
}

TEST(CrossRank, ALeadWithinTheClocksSpreadNamesNoStraggler) {
  // Rank 1's second all-reduce ends 4 us later than its first says it should: the clocks agree
  // within 4 us, so step 1's lead of 1 us names no one and step 2's 30 us still counts.
  trace_builder b;
  b.marker("ProfilerStep#1", 10000, 1000).marker("ProfilerStep#2", 11000, 1000);
  b.kernel(7, 10000, 499).kernel(7, 11000, 400);
  collective(b, 10499, 101);  // arrives 1 us before rank 0
  collective(b, 11450, 104);
  const two_ranks run(b.build());
  const cross_rank_report across = analyze_ranks(run.ranks);
  EXPECT_DOUBLE_EQ(across.clock_spread_us, 4);
  ASSERT_EQ(across.steps.size(), 2u);
  EXPECT_TRUE(across.steps[0].even) << across.steps[0].straggler_lead_us;
  EXPECT_FALSE(across.steps[1].even);
  EXPECT_EQ(across.steps[1].straggler, 0u);
}

TEST(CrossRank, TracesOfDifferentCollectivesAreFlagged) {
  trace_builder b;
  b.marker("ProfilerStep#1", 10000, 1000).kernel(7, 10000, 550);
  collective(b, 10550, 50);  // rank 1's trace stops after the first step
  const two_ranks shorter(b.build());
  const cross_rank_report across = analyze_ranks(shorter.ranks);
  EXPECT_FALSE(across.equal_collective_counts);
  EXPECT_EQ(across.matched_collectives, 1u);
  const two_ranks full;
  EXPECT_TRUE(analyze_ranks(full.ranks).equal_collective_counts);
}

TEST(CrossRank, WithoutAlignedClocksNoStragglerIsNamed) {
  // Ranks 0 and 1 have their collectives; rank 2 has none, so the clocks stay the writers'.
  two_ranks run;
  trace quiet = trace_builder().marker("ProfilerStep#1", 0, 1000).marker("ProfilerStep#2", 1000, 1000).kernel(7, 0, 400).build();
  const analysis quiet_result = analyze(quiet);
  const std::vector<rank_report> ranks{run.ranks[0], run.ranks[1], {2, quiet, quiet_result}};
  const cross_rank_report across = analyze_ranks(ranks);
  EXPECT_EQ(across.alignment, clock_alignment::writer_clocks);
  EXPECT_TRUE(across.steps.empty());
  EXPECT_EQ(across.ranks.size(), 3u);
}

TEST(CrossRank, OneRankHasNothingAcross) {
  two_ranks run;
  EXPECT_TRUE(analyze_ranks(std::span(run.ranks).first(1)).ranks.empty());
}

}  // namespace
}  // namespace streamsafe::monitor
