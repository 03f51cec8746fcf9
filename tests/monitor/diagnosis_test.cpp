// Each diagnosis rule, firing on a trace that has the misuse and silent on its fixed twin.
#include <gtest/gtest.h>

#include <algorithm>

#include "streamsafe/monitor/analysis.hpp"
#include "trace_builder.hpp"

namespace streamsafe::monitor {
namespace {

using testing::trace_builder;

bool fires(const trace& t, finding_kind kind) {
  const auto result = analyze(t);
  return std::any_of(result.findings.begin(), result.findings.end(), [&](const finding& f) { return f.kind == kind; });
}

finding only(const trace& t, finding_kind kind) {
  for (auto& f : analyze(t).findings) {
    if (f.kind == kind) return f;
  }
  ADD_FAILURE() << "no finding " << to_string(kind);
  return {};
}

TEST(Diagnosis, PageableCopy) {
  const auto bad = trace_builder().copy(3, 0, 100, "Memcpy HtoD (Pageable -> Device)").build();
  const auto good = trace_builder().copy(3, 0, 100, "Memcpy HtoD (Pinned -> Device)").build();
  const auto f = only(bad, finding_kind::pageable_copy);
  EXPECT_EQ(f.occurrences, 1u);
  EXPECT_DOUBLE_EQ(f.cost_us, 100);
  EXPECT_FALSE(f.fix.empty());
  EXPECT_FALSE(fires(good, finding_kind::pageable_copy));
}

TEST(Diagnosis, DefaultStreamCopyOnlyWithOtherStreams) {
  const auto bad = trace_builder().copy(legacy_default_stream, 0, 50).kernel(13, 60, 10).build();
  const auto alone = trace_builder().copy(legacy_default_stream, 0, 50).build();
  const auto good = trace_builder().copy(14, 0, 50).kernel(13, 10, 10).build();
  EXPECT_EQ(only(bad, finding_kind::default_stream_copy).occurrences, 1u);
  EXPECT_FALSE(fires(alone, finding_kind::default_stream_copy));
  EXPECT_FALSE(fires(good, finding_kind::default_stream_copy));
}

trace steps_with_syncs(int steps_with_sync) {
  trace_builder b;
  for (int i = 0; i < 3; ++i) {
    const double base = i * 100.0;
    b.marker("step", base, 90).call("cudaLaunchKernel", base + 1, 2, i + 1).kernel(1, base + 5, 10, i + 1);
    if (i < steps_with_sync) b.call("cudaDeviceSynchronize", base + 20, 5);
  }
  return b.build();
}

TEST(Diagnosis, DeviceSyncInLoop) {
  const auto f = only(steps_with_syncs(2), finding_kind::device_sync_in_loop);
  EXPECT_EQ(f.occurrences, 2u);
  EXPECT_NE(f.evidence.find("2 of 3 iterations"), std::string::npos);
  EXPECT_FALSE(fires(steps_with_syncs(1), finding_kind::device_sync_in_loop));
}

trace ping_pong(double consumer_start_offset) {
  // s2 copies, s1 waits for each copy (host calls cudaStreamWaitEvent before each launch).
  trace_builder b;
  for (int i = 0; i < 3; ++i) {
    const double base = i * 100.0;
    b.copy(2, base, 40);
    b.call("cudaStreamWaitEvent", base + 1, 1).call("cudaLaunchKernel", base + 2, 1, i + 1);
    b.kernel(1, base + 40 + consumer_start_offset, 50, i + 1);
  }
  return b.build();
}

TEST(Diagnosis, SerializingWait) {
  const auto f = only(ping_pong(2), finding_kind::serializing_wait);
  EXPECT_EQ(f.occurrences, 1u);
  EXPECT_GT(f.cost_us, 0);
  // Consumers that start before the copies end overlap them: no serialisation, no inferred wait.
  EXPECT_FALSE(fires(ping_pong(-30), finding_kind::serializing_wait));
}

TEST(Diagnosis, TooManyStreams) {
  const auto bad = trace_builder().kernel(1, 0, 10).kernel(2, 5, 10).kernel(3, 20, 10).build();
  const auto good = trace_builder().kernel(1, 0, 10).kernel(2, 5, 10).build();
  const auto f = only(bad, finding_kind::too_many_streams);
  EXPECT_EQ(f.occurrences, 1u);
  EXPECT_NE(f.evidence.find("3 streams had work but at most 2"), std::string::npos);
  EXPECT_FALSE(fires(good, finding_kind::too_many_streams));
}

trace events(std::string_view create_api, int creates_in_loop) {
  trace_builder b;
  for (int i = 0; i < 3; ++i) {
    b.marker("step", i * 100.0, 90).kernel(1, i * 100.0 + 5, 10);
    if (i < creates_in_loop) b.call(create_api, i * 100.0 + 1, 1);
  }
  return b.build();
}

TEST(Diagnosis, EventPerIteration) {
  EXPECT_EQ(only(events("cudaEventCreateWithFlags", 3), finding_kind::event_per_iteration).occurrences, 3u);
  EXPECT_FALSE(fires(events("cudaEventCreateWithFlags", 1), finding_kind::event_per_iteration));
}

TEST(Diagnosis, UnneededTimingEvents) {
  EXPECT_TRUE(fires(events("cudaEventCreate", 1), finding_kind::unneeded_timing_events));
  EXPECT_FALSE(fires(events("cudaEventCreateWithFlags", 1), finding_kind::unneeded_timing_events));
  auto timed = trace_builder().call("cudaEventCreate", 0, 1).call("cudaEventElapsedTime", 5, 1).kernel(1, 0, 1).build();
  EXPECT_FALSE(fires(timed, finding_kind::unneeded_timing_events));
}

TEST(Iterations, ProfilerStepBeatsInference) {
  auto t = trace_builder()
               .marker("ProfilerStep#1", 0, 50)
               .marker("fwd", 1, 5)
               .marker("fwd", 51, 5)
               .marker("fwd", 101, 5)
               .marker("ProfilerStep#2", 50, 50)
               .kernel(1, 10, 5)
               .kernel(1, 60, 5)
               .build();
  const auto plan = find_iterations(t);
  EXPECT_EQ(plan.source, iteration_source::profiler_step);
  ASSERT_EQ(plan.iterations.size(), 2u);
  EXPECT_EQ(plan.iterations[0].ops.size(), 1u);
  const auto inferred = find_iterations(trace_builder().marker("fwd", 1, 5).marker("fwd", 51, 5).marker("x", 0, 1).build());
  EXPECT_EQ(inferred.source, iteration_source::inferred);
  EXPECT_EQ(inferred.marker, "fwd");
  EXPECT_EQ(find_iterations(t, "fwd").iterations.size(), 3u);
}

}  // namespace
}  // namespace streamsafe::monitor
