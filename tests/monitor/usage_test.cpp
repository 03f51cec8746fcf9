// Busy union, idle, overlap and concurrency on a timeline worked out by hand.
#include <gtest/gtest.h>

#include "streamsafe/monitor/usage.hpp"
#include "trace_builder.hpp"

namespace streamsafe::monitor {
namespace {

using testing::trace_builder;

// stream 1: kernels [0,10] [5,15] [20,30]   -> busy [0,15]+[20,30] = 25
// stream 2: memcpy  [8,22]                  -> busy 14
// device:  union [0,30] = 30, idle 0; copy||compute = [8,15]+[20,22] = 9
trace two_streams() {
  return trace_builder()
      .kernel(1, 0, 10)
      .kernel(1, 5, 10)
      .kernel(1, 20, 10)
      .copy(2, 8, 14)
      .op(op_kind::event_record, 1, 40, 0)  // not work: must not stretch the window
      .op(op_kind::sync, 2, 35, 10)
      .build();
}

TEST(Usage, StreamBusyIsTheUnionOfItsWork) {
  const auto report = measure_usage(two_streams());
  ASSERT_EQ(report.streams.size(), 2u);
  EXPECT_DOUBLE_EQ(report.streams[0].busy_us, 25);
  EXPECT_EQ(report.streams[0].kernels, 3u);
  EXPECT_DOUBLE_EQ(report.streams[0].idle_us, 5);
  EXPECT_DOUBLE_EQ(report.streams[1].busy_us, 14);
  EXPECT_EQ(report.streams[1].memcpys, 1u);
  EXPECT_DOUBLE_EQ(report.streams[1].idle_us, 16);
}

TEST(Usage, DeviceFiguresAndOverlap) {
  const auto report = measure_usage(two_streams());
  ASSERT_EQ(report.devices.size(), 1u);
  const auto& d = report.devices[0];
  EXPECT_DOUBLE_EQ(d.window_us(), 30);
  EXPECT_DOUBLE_EQ(d.busy_us, 30);
  EXPECT_DOUBLE_EQ(d.idle_us, 0);
  EXPECT_DOUBLE_EQ(d.compute_us, 25);
  EXPECT_DOUBLE_EQ(d.copy_us, 14);
  EXPECT_DOUBLE_EQ(d.copy_compute_overlap_us, 9);
  ASSERT_EQ(d.stream_pairs.size(), 1u);
  EXPECT_DOUBLE_EQ(d.stream_pairs[0].overlap_us, 9);
  EXPECT_EQ(d.max_concurrent_streams, 2u);
}

TEST(Usage, TouchingIntervalsAreNotConcurrent) {
  const auto report = measure_usage(trace_builder().kernel(1, 0, 10).kernel(2, 10, 10).build());
  EXPECT_EQ(report.devices[0].max_concurrent_streams, 1u);
  EXPECT_DOUBLE_EQ(report.devices[0].busy_us, 20);
}

TEST(Usage, CommunicationKernelsAreNamedNccl) {
  auto t = trace_builder().op(op_kind::kernel, 3, 0, 10, "ncclDevKernel_AllReduce").kernel(1, 5, 10).build();
  const auto report = measure_usage(t);
  const auto& d = report.devices[0];
  EXPECT_DOUBLE_EQ(d.communication_us, 10);
  EXPECT_DOUBLE_EQ(d.compute_communication_overlap_us, 5);
}

TEST(Usage, QueueDepthCountsLaunchedUnfinishedOps) {
  // Three launches return at 1, 2, 3; the ops run [10,20] [20,30] [30,40]: depth 3 at t=3.
  auto t = trace_builder()
               .call("cudaLaunchKernel", 0, 1, 1)
               .call("cudaLaunchKernel", 1, 1, 2)
               .call("cudaLaunchKernel", 2, 1, 3)
               .kernel(1, 10, 10, 1)
               .kernel(1, 20, 10, 2)
               .kernel(1, 30, 10, 3)
               .build();
  const auto report = measure_usage(t);
  const auto& s = report.streams[0];
  EXPECT_EQ(s.max_queue_depth, 3u);
  // Over the window [10,40]: depth 3 for 10, 2 for 10, 1 for 10 -> mean 2.
  EXPECT_DOUBLE_EQ(s.mean_queue_depth, 2);
}

TEST(Usage, SelectionLimitsTheOps) {
  const auto t = two_streams();
  const std::vector<std::size_t> first_two = {0, 1};  // kernels [0,10] and [5,15]
  const auto report = measure_usage(t, first_two);
  ASSERT_EQ(report.streams.size(), 1u);
  EXPECT_DOUBLE_EQ(report.streams[0].busy_us, 15);
}

}  // namespace
}  // namespace streamsafe::monitor
