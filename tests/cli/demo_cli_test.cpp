// `streamsafe demo` and `--version` as a user runs them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_run.hpp"

namespace {

using streamsafe::cli_test::figure;
using streamsafe::cli_test::run;
using streamsafe::cli_test::scratch_dir;

TEST(DemoCli, VersionNamesTheBackends) {
  auto result = run("--version");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.output, ::testing::ContainsRegex("backends:( cuda)? sim"));
}

TEST(DemoCli, SimExposesTheMissingWaitForEverySeedAndTheFixNever) {
  const scratch_dir out("demo-out");
  for (int seed = 1; seed <= 5; ++seed) {
    auto result = run("demo --backend sim --json --trials 4 --out " + out.path() + " --seed " +
                      std::to_string(seed));
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_EQ(figure(result.output, "trials"), 4);
    EXPECT_GT(figure(result.output, "buggy_corrupted"), 0) << result.output;
    EXPECT_EQ(figure(result.output, "fixed_corrupted"), 0) << result.output;
    EXPECT_THAT(result.output, ::testing::HasSubstr("\"backend\":\"sim\""));
  }
}

TEST(DemoCli, SimExposesTheMissingRecordStreamAndTheEngineCatchesAndFixesBoth) {
  const scratch_dir out("demo-cli-test");
  const std::string& out_dir = out.path();
  auto result = run("demo --backend sim --json --trials 3 --out " + out_dir);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(figure(result.output, "lifetime_buggy_corrupted"), 3) << result.output;
  EXPECT_EQ(figure(result.output, "lifetime_fixed_corrupted"), 0) << result.output;
  EXPECT_EQ(figure(result.output, "lifetime_poison_corrupted"), 3) << result.output;
  EXPECT_EQ(figure(result.output, "hazards_reported"), 2) << result.output;
  EXPECT_EQ(figure(result.output, "enforce_corrupted"), 0) << result.output;
  EXPECT_EQ(figure(result.output, "enforce_inserted_waits"), 3) << result.output;
  EXPECT_EQ(figure(result.output, "enforce_inserted_record_streams"), 3) << result.output;
  EXPECT_EQ(figure(result.output, "timeline_streams"), 3) << result.output;
  EXPECT_THAT(result.output, ::testing::HasSubstr("\"timeline_collected\":true"));
}

TEST(DemoCli, SimFindsTheHandMadeLoopsHazardsAndNoneInThePipeline) {
  const scratch_dir out("demo-cli-pipeline");
  const std::string& out_dir = out.path();
  auto result = run("demo --backend sim --json --trials 1 --out " + out_dir);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_GT(figure(result.output, "handmade_loop_hazards"), 0) << result.output;
  EXPECT_EQ(figure(result.output, "pipeline_hazards"), 0) << result.output;
  EXPECT_THAT(result.output, ::testing::HasSubstr("\"pipeline_timeline_collected\":true"));
  EXPECT_TRUE(std::filesystem::exists(out_dir + "/streamsafe-demo-pipeline-trace.json"));
}

TEST(DemoCli, TextOutputTellsTheStory) {
  const scratch_dir out("demo-out");
  auto result = run("demo --backend sim --trials 3 --out " + out.path());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, ::testing::HasSubstr("without wait_event: 3/3 trials corrupted"));
  EXPECT_THAT(result.output, ::testing::HasSubstr("with wait_event:    0/3 trials corrupted"));
  EXPECT_THAT(result.output, ::testing::ContainsRegex("3 steps under STREAMSAFE_HAZARDS=report: [1-9][0-9]* distinct hazards"));
  EXPECT_THAT(result.output, ::testing::ContainsRegex("the pipeline makes every hand-off\\): 0 hazards"));
}

TEST(DemoCli, BadOptionsAreRejectedWithTheirName) {
  auto unknown = run("demo --frobnicate");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.output, ::testing::HasSubstr("--frobnicate"));
  auto bad_number = run("demo --trials many");
  EXPECT_EQ(bad_number.exit_code, 2);
  EXPECT_THAT(bad_number.output, ::testing::HasSubstr("--trials"));
  auto bad_backend = run("demo --backend tpu");
  EXPECT_EQ(bad_backend.exit_code, 2);
  EXPECT_THAT(bad_backend.output, ::testing::HasSubstr("tpu"));
}

}  // namespace
