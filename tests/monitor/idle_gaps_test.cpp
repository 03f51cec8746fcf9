// Gap causes and the critical path on a hand-built timeline (times in us, host thread 1):
//   K1 [0,10] s1          C1 [20,45] s2 (producer)
//   wait call at 3, L2 [5,7] -> K2 [50,60]     : event_wait (queued early, starts 5 after C1 ends)
//   L3 [60,62] -> K3 [100,110]
//   cudaDeviceSynchronize [112,190], L4 [195,198] -> K4 [200,210] : host_sync
//   L5 [206,213] -> K5 [215,220]                : launch_bound (host in API calls all the gap)
//   L6 [395,397] -> K6 [400,410]                : nothing_queued (host idle of API calls)
//   L7 [405,406] -> K7 [500,510]                : unexplained (queued in time, nothing released it)
#include <gtest/gtest.h>

#include "streamsafe/monitor/critical_path.hpp"
#include "streamsafe/monitor/idle_gaps.hpp"
#include "trace_builder.hpp"

namespace streamsafe::monitor {
namespace {

using testing::trace_builder;

trace gap_trace() {
  return trace_builder()
      .kernel(1, 0, 10)
      .copy(2, 20, 25)
      .call("cudaStreamWaitEvent", 3, 1)
      .call("cudaLaunchKernel", 5, 2, 2)
      .kernel(1, 50, 10, 2)
      .call("cudaLaunchKernel", 60, 2, 3)
      .kernel(1, 100, 10, 3)
      .call("cudaDeviceSynchronize", 112, 78)
      .call("cudaLaunchKernel", 195, 3, 4)
      .kernel(1, 200, 10, 4)
      .call("cudaLaunchKernel", 206, 7, 5)
      .kernel(1, 215, 5, 5)
      .call("cudaLaunchKernel", 395, 2, 6)
      .kernel(1, 400, 10, 6)
      .call("cudaLaunchKernel", 405, 1, 7)
      .kernel(1, 500, 10, 7)
      .build();
}

std::size_t op_at(const trace& t, double ts) {
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops[i].ts_us == ts) return i;
  }
  ADD_FAILURE() << "no op at " << ts;
  return 0;
}

TEST(IdleGaps, EachCauseWithItsEvidence) {
  const auto t = gap_trace();
  const auto gaps = find_idle_gaps(t);
  ASSERT_EQ(gaps.size(), 6u);
  const gap_cause expected[] = {gap_cause::event_wait,     gap_cause::unexplained,    gap_cause::host_sync,
                                gap_cause::launch_bound,   gap_cause::nothing_queued, gap_cause::unexplained};
  for (std::size_t i = 0; i < gaps.size(); ++i) EXPECT_EQ(gaps[i].cause, expected[i]) << "gap " << i;

  EXPECT_DOUBLE_EQ(gaps[0].begin_us, 10);
  EXPECT_DOUBLE_EQ(gaps[0].length_us(), 40);
  ASSERT_TRUE(gaps[0].producer_op.has_value());
  EXPECT_EQ(*gaps[0].producer_op, op_at(t, 20));
  EXPECT_EQ(gaps[0].wait, wait_evidence::inferred);

  ASSERT_TRUE(gaps[2].host_call.has_value());
  EXPECT_EQ(t.name_of(t.calls[*gaps[2].host_call]), "cudaDeviceSynchronize");
  EXPECT_DOUBLE_EQ(gaps[3].host_api_fraction, 1.0);
  EXPECT_LT(gaps[4].host_api_fraction, 0.5);
  EXPECT_NE(describe(t, gaps[0], 0).find("stream 2"), std::string::npos);
  EXPECT_NE(describe(t, gaps[2], 0).find("cudaDeviceSynchronize"), std::string::npos);
}

TEST(IdleGaps, NoWaitCallMeansNoInferredWait) {
  // Same timeline as K1/C1/K2 but the host never called cudaStreamWaitEvent.
  const auto t = trace_builder().kernel(1, 0, 10).copy(2, 20, 25).call("cudaLaunchKernel", 5, 2, 2).kernel(1, 50, 10, 2).build();
  const auto gaps = find_idle_gaps(t);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].cause, gap_cause::unexplained);
  EXPECT_TRUE(gaps[0].producer_op.has_value());  // named as an implicit dependency
}

TEST(IdleGaps, ShortGapsAreIgnored) {
  const auto t = trace_builder().kernel(1, 0, 10).kernel(1, 10.5, 10).build();
  EXPECT_TRUE(find_idle_gaps(t).empty());
  EXPECT_EQ(find_idle_gaps(t, {0.1, 20}).size(), 1u);
}

TEST(CriticalPath, FollowsTheWaitToTheProducer) {
  const auto t = gap_trace();
  const auto gaps = find_idle_gaps(t);
  const auto path = find_critical_path(t, gaps, 0);
  // C1, K2, K3, K4, K5, K6, K7: K1 is not on it because K2 waited for C1, which ended later.
  ASSERT_EQ(path.ops.size(), 7u);
  EXPECT_EQ(path.ops.front(), op_at(t, 20));
  EXPECT_EQ(path.ops.back(), op_at(t, 500));
  EXPECT_EQ(path.cross_stream_edges, 1u);
  EXPECT_DOUBLE_EQ(path.length_us, 490);
  EXPECT_DOUBLE_EQ(path.busy_us, 25 + 10 + 10 + 10 + 5 + 10 + 10);
  EXPECT_DOUBLE_EQ(path.busy_by_stream.at({0, 2}), 25);
}

TEST(CriticalPath, SingleStreamIsTheWholeStream) {
  const auto t = trace_builder().kernel(1, 0, 10).kernel(1, 20, 10).kernel(2, 0, 5).build();
  const auto path = find_critical_path(t, find_idle_gaps(t), 0);
  EXPECT_EQ(path.ops.size(), 2u);
  EXPECT_EQ(path.cross_stream_edges, 0u);
  EXPECT_DOUBLE_EQ(path.busy_us, 20);
}

}  // namespace
}  // namespace streamsafe::monitor
