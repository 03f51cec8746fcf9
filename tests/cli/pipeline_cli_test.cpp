// `streamsafe pipeline` as a user runs it, on sim: the JSON's figures and the text's story.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli_run.hpp"

namespace {

using streamsafe::cli_test::figure;
using streamsafe::cli_test::number;
using streamsafe::cli_test::run;

TEST(PipelineCli, SimJsonHasNoHazardNoLoopAllocationAndTheBound) {
  for (const char* config : {"copy_bound", "sm_bound", "balanced"}) {
    const auto result = run(std::string("pipeline --backend sim --json --steps 6 --config ") + config);
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(figure(result.output, "steps"), 6);
    EXPECT_EQ(figure(result.output, "depth"), 2);
    EXPECT_EQ(figure(result.output, "hazards"), 0) << result.output;
    EXPECT_EQ(figure(result.output, "loop_allocations"), 0) << result.output;
    EXPECT_EQ(figure(result.output, "loop_host_syncs"), 0) << result.output;
    EXPECT_EQ(figure(result.output, "loop_events_created"), 0) << result.output;
    EXPECT_GT(number(result.output, "bound_us"), 0) << result.output;
    EXPECT_GT(number(result.output, "step_us"), 0) << result.output;
    EXPECT_GT(number(result.output, "efficiency"), 0) << result.output;
    EXPECT_GE(number(result.output, "h2d_gbps"), 0) << result.output;
    EXPECT_THAT(result.output, ::testing::HasSubstr("\"checked\":true"));
    for (const char* stage : {"h2d", "preprocess", "compute", "sync", "step"}) {
      EXPECT_THAT(result.output, ::testing::HasSubstr(std::string("{\"name\":\"") + stage + "\",\"stream\":\"" + stage + "\""));
    }
    EXPECT_THAT(result.output, ::testing::ContainsRegex("\"alone_us\":[0-9.]+,\"busy_us\":[0-9.]+"));
  }
}

TEST(PipelineCli, SyncStageShowsItsBucketsAndTheNetworkInTheBound) {
  const auto result = run("pipeline --backend sim --json --steps 4 --ranks 2 --bucket-mib 0.015625");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(figure(result.output, "ranks"), 2);
  EXPECT_EQ(figure(result.output, "bucket_cap_bytes"), 16384);
  EXPECT_EQ(figure(result.output, "buckets"), 2) << result.output;
  EXPECT_THAT(result.output, ::testing::HasSubstr("\"bucket_bytes\":[16384,16384]"));
  EXPECT_THAT(result.output, ::testing::HasSubstr("\"communicator\":\"sim rank 0/2\""));
  EXPECT_THAT(result.output, ::testing::HasSubstr("{\"name\":\"sync\",\"stream\":\"sync\",\"resource\":\"network\""));
  EXPECT_GT(number(result.output, "network_us"), 0) << result.output;
  EXPECT_EQ(figure(result.output, "hazards"), 0) << result.output;
  EXPECT_EQ(figure(result.output, "loop_allocations"), 0) << result.output;
  const auto cuda = run("pipeline --backend cuda --ranks 2");
  EXPECT_EQ(cuda.exit_code, 2);
  EXPECT_THAT(cuda.output, ::testing::HasSubstr("--ranks above 1 runs on sim only"));
}

TEST(PipelineCli, DepthIsConfigurable) {
  const auto result = run("pipeline --backend sim --json --steps 5 --depth 3");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(figure(result.output, "depth"), 3);
  EXPECT_EQ(figure(result.output, "hazards"), 0) << result.output;
}

TEST(PipelineCli, OutWritesTheJsonAndATimelineWithDependencyArrows) {
  const streamsafe::cli_test::scratch_dir out("pipeline-cli-test");
  const std::string& dir = out.path();
  const auto result = run("pipeline --backend sim --steps 4 --out " + dir);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream json(dir + "/pipeline.json");
  std::stringstream text;
  text << json.rdbuf();
  EXPECT_GT(number(text.str(), "bound_us"), 0) << text.str();
  std::ifstream trace(dir + "/pipeline_trace.json");
  std::stringstream timeline;
  timeline << trace.rdbuf();
  EXPECT_THAT(timeline.str(), ::testing::HasSubstr("\"cat\":\"stream_wait\""));
  EXPECT_THAT(timeline.str(), ::testing::HasSubstr("preprocess"));
}

TEST(PipelineCli, TextTellsWhereTheTimeWent) {
  const auto result = run("pipeline --backend sim --steps 4");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, ::testing::HasSubstr("bound:"));
  EXPECT_THAT(result.output, ::testing::ContainsRegex("network [0-9.]+\\)"));
  EXPECT_THAT(result.output, ::testing::ContainsRegex("sync: +sim rank 0/1, [0-9]+ bucket\\(s\\) of"));
  EXPECT_THAT(result.output, ::testing::HasSubstr("efficiency"));
  EXPECT_THAT(result.output, ::testing::HasSubstr("loop:  0 allocations, 0 frees, 0 host syncs"));
  EXPECT_THAT(result.output, ::testing::HasSubstr("hazards: 0"));
  EXPECT_THAT(result.output, ::testing::HasSubstr("every time is host time"));
}

TEST(PipelineCli, BadOptionsAreRejectedWithTheirName) {
  const auto config = run("pipeline --config huge");
  EXPECT_EQ(config.exit_code, 2);
  EXPECT_THAT(config.output, ::testing::HasSubstr("--config must be copy_bound, sm_bound or balanced"));
  const auto steps = run("pipeline --steps 1");
  EXPECT_EQ(steps.exit_code, 2);
  EXPECT_THAT(steps.output, ::testing::HasSubstr("--steps"));
}

}  // namespace
