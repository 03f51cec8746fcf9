// `streamsafe check` end to end: exit codes, --json, and bad input named by line.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

struct cli_result {
  int exit_code = -1;
  std::string out;  // stdout only, unless the command redirects
};

cli_result run_cli(const std::string& arguments) {
  const std::string command = std::string(STREAMSAFE_CLI) + " " + arguments;
  cli_result result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) result.out += buffer.data();
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string oplog(const std::string& name) { return std::string(STREAMSAFE_OPLOG_DIR) + "/" + name + ".jsonl"; }

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "streamsafe-" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(CheckCli, CleanLogExitsZero) {
  const auto result = run_cli("check " + oplog("four_stream_chain_fixed"));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("27 ops, 0 hazards"), std::string::npos) << result.out;
}

TEST(CheckCli, HazardsExitOneAndTheTextNamesTheFix) {
  const auto result = run_cli("check " + oplog("four_stream_chain_buggy"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.out.find("make stream `compute` wait on an event recorded on `preprocess` after `normalize` (chain.cpp:16)"),
            std::string::npos)
      << result.out;
}

TEST(CheckCli, InformationalFindingsAloneExitZero) {
  const auto result = run_cli("check " + oplog("redundant_wait_buggy"));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("redundant_wait"), std::string::npos) << result.out;
}

TEST(CheckCli, JsonIsExactlyTheIssuesShape) {
  const auto result = run_cli("check --json " + oplog("side_read_no_record_buggy"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out,
            "{\"ops\":10,\"hazards\":[{\"kind\":\"reuse_race\","
            "\"first\":{\"line\":8,\"op\":\"side_read\",\"stream\":\"side\",\"loc\":\"reuse.cpp:24\",\"access\":\"read\"},"
            "\"second\":{\"line\":11,\"op\":\"overwrite\",\"stream\":\"main\",\"loc\":\"reuse.cpp:27\",\"access\":\"write\"},"
            "\"range\":[4096,256],"
            "\"fix\":\"call record_stream(0x1000, `side`) before the free at reuse.cpp:25\"}]}\n");
}

TEST(CheckCli, JsonOfACleanLogHasNoHazards) {
  const auto result = run_cli("check " + oplog("producer_consumer_fixed") + " --json");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "{\"ops\":7,\"hazards\":[]}\n");
}

TEST(CheckCli, EnforceExitsZeroAndCountsInsertions) {
  const auto result = run_cli("check --enforce " + oplog("producer_consumer_buggy"));
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_NE(result.out.find("enforce inserted 1 stream wait(s)"), std::string::npos) << result.out;
}

TEST(CheckCli, BadInputExitsTwoNamingTheLine) {
  const std::string path = temp_file("bad_oplog.jsonl", "{\"streamsafe_oplog\":1}\n{\"op\":\"device_sync\"}\n{\"op\":\"free\"}\n");
  const auto result = run_cli("check " + path + " 2>&1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.out.find("line 3: op \"free\" needs field \"ptr\""), std::string::npos) << result.out;
}

TEST(CheckCli, SemanticErrorsAreBadInputToo) {
  const std::string path = temp_file("double_free.jsonl", "{\"streamsafe_oplog\":1}\n{\"op\":\"free\",\"ptr\":16}\n");
  const auto result = run_cli("check " + path + " 2>&1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.out.find("line 2:"), std::string::npos) << result.out;
}

TEST(CheckCli, MissingFileAndMissingArgumentExitTwo) {
  EXPECT_EQ(run_cli("check /nonexistent/oplog.jsonl 2>/dev/null").exit_code, 2);
  EXPECT_EQ(run_cli("check 2>/dev/null").exit_code, 2);
  EXPECT_EQ(run_cli("check --bogus x 2>/dev/null").exit_code, 2);
}

}  // namespace
