// The real PyTorch profiler trace: a copy stream plus compute on an H200, with a pageable copy
// and a device-wide synchronize in the loop on purpose.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "streamsafe/monitor/analysis.hpp"
#include "streamsafe/monitor/trace_reader.hpp"

namespace streamsafe::monitor {
namespace {

const std::filesystem::path kineto_trace = std::filesystem::path(STREAMSAFE_SHARED_DATA) / "kineto_copy_train.json.gz";

class KinetoTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kineto_trace)) GTEST_SKIP() << kineto_trace << " not present";
    t_ = read_trace(kineto_trace);
    result_ = analyze(t_);
  }
  [[nodiscard]] const finding* find(finding_kind kind) const {
    auto it = std::find_if(result_.findings.begin(), result_.findings.end(), [&](const finding& f) { return f.kind == kind; });
    return it == result_.findings.end() ? nullptr : &*it;
  }
  trace t_;
  analysis result_;
};

TEST_F(KinetoTrace, HasTheComputeAndCopyStreams) {
  ASSERT_EQ(result_.usage.streams.size(), 2u);
  const auto& compute = result_.usage.streams[0];
  const auto& copy = result_.usage.streams[1];
  EXPECT_EQ(compute.stream, (stream_key{0, 7}));
  EXPECT_EQ(copy.stream, (stream_key{0, 13}));
  // Counted independently of the reader from the trace with a JSON tool.
  EXPECT_EQ(compute.kernels, 192u);
  EXPECT_EQ(compute.memcpys, 3u);
  EXPECT_EQ(compute.memsets, 36u);
  EXPECT_EQ(copy.memcpys, 24u);
  EXPECT_EQ(copy.kernels, 0u);
  EXPECT_GT(compute.busy_us, copy.busy_us);
  const auto& device = result_.usage.devices[0];
  EXPECT_LE(device.busy_us, device.window_us());
  EXPECT_GT(device.copy_compute_overlap_us, 0);  // the copy stream does overlap compute
  EXPECT_EQ(t_.device_names.at(0), "NVIDIA H200");
}

TEST_F(KinetoTrace, DiagnosesThePageableCopyOnTheDefaultStream) {
  const finding* pageable = find(finding_kind::pageable_copy);
  ASSERT_NE(pageable, nullptr);
  EXPECT_EQ(pageable->occurrences, 3u);
  const finding* default_stream = find(finding_kind::default_stream_copy);
  ASSERT_NE(default_stream, nullptr);
  EXPECT_EQ(default_stream->occurrences, 3u);
}

TEST_F(KinetoTrace, DiagnosesTheDeviceSynchronizeInTheLoop) {
  const finding* sync = find(finding_kind::device_sync_in_loop);
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->occurrences, 5u);
  EXPECT_NE(sync->evidence.find("cudaDeviceSynchronize"), std::string::npos);
}

TEST_F(KinetoTrace, FindsIterationsAndClassifiesGaps) {
  EXPECT_EQ(result_.iterations.iterations.size(), 12u);
  EXPECT_FALSE(result_.gaps.empty());
  const bool some_host_sync = std::any_of(result_.gaps.begin(), result_.gaps.end(),
                                          [](const idle_gap& g) { return g.cause == gap_cause::host_sync; });
  EXPECT_TRUE(some_host_sync);
  ASSERT_EQ(result_.critical_paths.size(), 1u);
  EXPECT_GT(result_.critical_paths[0].ops.size(), 1u);
}

}  // namespace
}  // namespace streamsafe::monitor
