// `streamsafe replay` as a user runs it: one pass, a training loop, a busy device, a tight device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli_run.hpp"

namespace {

using streamsafe::cli_test::figure;
using streamsafe::cli_test::number;
using streamsafe::cli_test::run;

/// A training step on two streams: kept weights, activations, one used by the second stream.
std::string write_trace() {
  const std::string path = streamsafe::cli_test::temp_path("replay-cli-test.csv");
  std::ofstream(path) << "action,addr,size,stream\n"
                         "alloc,9,8000000,0\n"
                         "alloc,1,3000000,0\n"
                         "alloc,2,300000,1\n"
                         "record_stream,2,0,0\n"
                         "free_requested,1,3000000,0\n"
                         "alloc,3,5000000,0\n"
                         "free_requested,2,300000,1\n"
                         "free_requested,3,5000000,0\n";
  return path;
}

TEST(ReplayCli, LoopPrintsFirstIterationAndSteadyStateFiguresAsJson) {
  const auto result = run("replay " + write_trace() + " --iterations 4 --json");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string& json = result.output;
  EXPECT_EQ(figure(json, "iterations"), 4);
  EXPECT_EQ(figure(json, "streams"), 2);
  EXPECT_EQ(figure(json, "record_streams"), 4);
  EXPECT_EQ(figure(json, "operations"), 7 + 3 * 6);  // the weights are allocated once
  EXPECT_GT(number(json, "first_device_calls_per_iteration"), 0) << json;
  EXPECT_EQ(number(json, "steady_device_calls_per_iteration"), 0) << json;
  EXPECT_EQ(number(json, "steady_syncs_per_iteration"), 0) << json;
  EXPECT_EQ(number(json, "first_syncs_per_iteration"), 0) << json;
  EXPECT_GE(number(json, "steady_ns_per_op"), 0) << json;
  EXPECT_GE(number(json, "first_ns_per_op"), 0) << json;
  // The allocator's own calls are a part of each pass's host time.
  EXPECT_GT(number(json, "steady_allocator_ns_per_op"), 0) << json;
  EXPECT_LE(number(json, "steady_allocator_ns_per_op"), number(json, "steady_ns_per_op")) << json;
  EXPECT_LE(number(json, "first_allocator_ns_per_op"), number(json, "first_ns_per_op")) << json;
  // The clock's own share of those calls is measured, and is a part of them.
  EXPECT_GT(number(json, "steady_timer_ns_per_op"), 0) << json;
  EXPECT_LE(number(json, "steady_timer_ns_per_op"), number(json, "steady_allocator_ns_per_op")) << json;
  EXPECT_THAT(json, ::testing::HasSubstr(",\"timer_ns_per_op\":"));
  EXPECT_EQ(number(json, "last_device_calls_per_iteration"), 0) << json;
  EXPECT_EQ(figure(json, "steady_peak_live_bytes"), 8000000 + 300000 + 5000000) << json;
  EXPECT_GE(number(json, "steady_reserved_over_live"), 1.0) << json;
  EXPECT_GE(number(json, "first_reserved_over_live"), 1.0) << json;
  EXPECT_THAT(json, ::testing::HasSubstr("\"busy\":false"));
  EXPECT_THAT(json, ::testing::HasSubstr(",\"device_calls_by_kind\":{\"create\":"));
}

TEST(ReplayCli, OnePassHasNoSteadyState) {
  const auto result = run("replay " + write_trace() + " --json");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(figure(result.output, "iterations"), 1);
  EXPECT_EQ(number(result.output, "steady_ns_per_op"), -1) << result.output;
  EXPECT_GT(number(result.output, "first_device_calls_per_iteration"), 0) << result.output;
}

TEST(ReplayCli, BusyDeviceRunsTheLoopAndSaysSo) {
  const auto json = run("replay " + write_trace() + " --iterations 3 --busy --busy-us 50 --busy-every 2 --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_THAT(json.output, ::testing::HasSubstr("\"busy\":true"));
  EXPECT_THAT(json.output, ::testing::HasSubstr("threaded"));
  EXPECT_EQ(figure(json.output, "iterations"), 3);
  const auto text = run("replay " + write_trace() + " --iterations 2 --busy --conf expandable_growth:settle");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, ::testing::HasSubstr("device kept busy: a 100 us kernel every 100 operations"));
  EXPECT_THAT(text.output, ::testing::HasSubstr("segments: expandable, settle"));
  EXPECT_THAT(text.output, ::testing::ContainsRegex("steady \\(2\\.\\.N\\) +[0-9.]+ +[0-9.]+ +[0-9.]+ +0\\.0 +0\\.0"));
  EXPECT_THAT(text.output, ::testing::HasSubstr("last iteration"));
}

TEST(ReplayCli, ATightDeviceMakesStreamsShareTheirCachesInSteadyState) {
  // Stream 0 frees a block before stream 1 asks for as much: with room to grow, stream 1 builds
  // its own cache; with 1.1 x the peak live bytes free, it must borrow stream 0's every pass.
  const std::string path = streamsafe::cli_test::temp_path("replay-cli-lending.csv");
  std::ofstream(path) << "action,addr,size,stream\n"
                         "alloc,1,8000000,0\n"
                         "free_requested,1,8000000,0\n"
                         "alloc,2,8000000,1\n"
                         "free_requested,2,8000000,1\n";
  const auto roomy = run("replay " + path + " --iterations 3 --json");
  ASSERT_EQ(roomy.exit_code, 0) << roomy.output;
  EXPECT_EQ(number(roomy.output, "steady_cross_stream_reuses_per_iteration"), 0) << roomy.output;
  const auto tight = run("replay " + path + " --iterations 3 --headroom 1.1 --json");
  ASSERT_EQ(tight.exit_code, 0) << tight.output;
  EXPECT_THAT(tight.output, ::testing::HasSubstr("\"headroom\":1.1"));
  EXPECT_GE(number(tight.output, "steady_cross_stream_reuses_per_iteration"), 1) << tight.output;
  EXPECT_LT(number(tight.output, "steady_reserved_over_live"), number(roomy.output, "steady_reserved_over_live"));
}

TEST(ReplayCli, BadLoopOptionsAreRejectedWithTheirName) {
  const std::string trace = write_trace();
  for (const std::string bad :
       {"--iterations 0", "--iterations many", "--busy --busy-every 0", "--headroom lots", "--headroom -1"}) {
    const auto result = run("replay " + trace + " " + bad);
    EXPECT_EQ(result.exit_code, 2) << bad << ": " << result.output;
    EXPECT_THAT(result.output, ::testing::ContainsRegex("--(iterations|busy-every|headroom)")) << bad;
  }
}

}  // namespace
