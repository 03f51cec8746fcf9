// Three real PyTorch profiler traces from HolisticTraceAnalysis's test data (../shared/data/hta):
// what that project's tests assert about them, and the figures a double-precision reader gets
// wrong on nanosecond timestamps. Expected figures were worked out from the JSON text with exact
// decimal arithmetic (Python's decimal module), not with this reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <unordered_map>

#include "monitor/exact_time.hpp"
#include "streamsafe/monitor/analysis.hpp"
#include "streamsafe/monitor/trace_reader.hpp"

namespace streamsafe::monitor {
namespace {

const std::filesystem::path hta_data = std::filesystem::path(STREAMSAFE_SHARED_DATA) / "hta";

trace read_hta(const char* name) {
  const auto file = hta_data / name;
  if (!std::filesystem::exists(file)) throw std::runtime_error(file.string() + " not present");
  return read_trace(file);
}

#define SKIP_WITHOUT_HTA_DATA()                                                  \
  if (!std::filesystem::exists(hta_data)) GTEST_SKIP() << hta_data << " not present"

/// The op's start on the writer's clock, in nanoseconds.
std::int64_t absolute_ns(const trace& t, const gpu_op& op) {
  return *t.origin_ns + std::llround(op.ts_us * 1000.0);
}

TEST(HtaTraces, NanosecondDigitsSurvive) {
  SKIP_WITHOUT_HTA_DATA();
  const trace t = read_hta("hta_ns_resolution_rank0.json.gz");
  ASSERT_TRUE(t.origin_ns.has_value());
  // The first kernel: "ts": 1712195495505582.988, "dur": 4.928. A double holds that ts only to
  // a quarter of a microsecond.
  const auto first_kernel = std::find_if(t.ops.begin(), t.ops.end(), [](const gpu_op& op) { return op.kind == op_kind::kernel; });
  ASSERT_NE(first_kernel, t.ops.end());
  EXPECT_EQ(absolute_ns(t, *first_kernel), 1'712'195'495'505'582'988);
  EXPECT_EQ(std::llround(first_kernel->dur_us * 1000.0), 4'928);
}

TEST(HtaTraces, BusyAndCopyTimesAreExact) {
  SKIP_WITHOUT_HTA_DATA();
  const analysis result = analyze(read_hta("hta_ns_resolution_rank0.json.gz"));
  ASSERT_EQ(result.usage.devices.size(), 1u);
  const device_usage& device = result.usage.devices[0];
  // Exact unions of the 6,095 kernels, copies and memsets: 472,454.441 us busy, 4,300.839 us of
  // copies and memsets. Read through doubles on epoch microseconds: 472,462.5 and 4,289.25.
  EXPECT_NEAR(device.busy_us, 472'454.441, 0.0005);
  EXPECT_NEAR(device.copy_us, 4'300.839, 0.0005);
  EXPECT_NEAR(device.window_us(), 480'029.179, 0.0005);
}

TEST(HtaTraces, GpuOpsLaunchedBeforeTheLastProfilerStep) {
  SKIP_WITHOUT_HTA_DATA();
  const trace t = read_hta("hta_ns_resolution_rank0.json.gz");
  double last_step = -1e300;
  for (const auto& range : t.annotations) {
    if (t.name_of(range).starts_with("ProfilerStep#")) last_step = std::max(last_step, range.ts_us);
  }
  std::unordered_map<std::int64_t, double> launch_at;
  for (const auto& call : t.calls) launch_at.emplace(call.correlation, call.ts_us);
  const auto launched_before = std::count_if(t.ops.begin(), t.ops.end(), [&](const gpu_op& op) {
    if (op.kind != op_kind::kernel && op.kind != op_kind::memcpy && op.kind != op_kind::memset) return false;
    const auto launch = launch_at.find(op.correlation);
    return launch != launch_at.end() && launch->second < last_step;
  });
  EXPECT_EQ(launched_before, 4876);  // HolisticTraceAnalysis's figure for this trace
}

TEST(HtaTraces, NcclKernels) {
  SKIP_WITHOUT_HTA_DATA();
  const trace t = read_hta("hta_nccl_data.json.gz");
  const gpu_op* longest = nullptr;
  std::size_t nccl = 0;
  for (const auto& op : t.ops) {
    if (op.kind != op_kind::kernel || t.name_of(op).find("ncclKernel") == std::string_view::npos) continue;
    ++nccl;
    if (longest == nullptr || op.dur_us > longest->dur_us) longest = &op;
  }
  EXPECT_EQ(nccl, 21u);
  ASSERT_NE(longest, nullptr);
  EXPECT_NE(t.name_of(*longest).find("AllReduce"), std::string_view::npos);
  EXPECT_EQ(std::llround(longest->dur_us * 1000.0), 5'993'392);
}

TEST(HtaTraces, SixGpuStreams) {
  SKIP_WITHOUT_HTA_DATA();
  const analysis result = analyze(read_hta("hta_negative_queue_length_rank0.json.gz"));
  std::set<stream_key> streams;
  for (const auto& stream : result.usage.streams) {
    if (stream.busy_us > 0) streams.insert(stream.stream);
  }
  EXPECT_EQ(streams.size(), 6u);
}

TEST(ExactTime, DecimalMicrosecondsToNanoseconds) {
  using detail::microseconds_text_to_ns;
  EXPECT_EQ(microseconds_text_to_ns("1712195495519689.047"), 1'712'195'495'519'689'047);
  EXPECT_EQ(microseconds_text_to_ns("5.5"), 5'500);
  EXPECT_EQ(microseconds_text_to_ns("7"), 7'000);
  EXPECT_EQ(microseconds_text_to_ns("-2.25"), -2'250);
  EXPECT_EQ(microseconds_text_to_ns("0.0004"), 0);
  EXPECT_EQ(microseconds_text_to_ns("0.0005"), 1);  // half away from zero
  EXPECT_EQ(microseconds_text_to_ns("1.5e3"), 1'500'000);
  EXPECT_EQ(microseconds_text_to_ns("12 \n"), 12'000);
  EXPECT_FALSE(microseconds_text_to_ns("9300000000000000"));  // 9.3e18 ns: beyond int64
  EXPECT_FALSE(microseconds_text_to_ns("1."));
  EXPECT_FALSE(microseconds_text_to_ns(".5"));
  EXPECT_FALSE(microseconds_text_to_ns("1.2.3"));
  EXPECT_FALSE(microseconds_text_to_ns(""));
}

}  // namespace
}  // namespace streamsafe::monitor
