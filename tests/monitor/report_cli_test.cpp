// End to end: `streamsafe report --json` on the real trace and on malformed input.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

struct run_result {
  int status = -1;
  std::string output;
};

run_result run(const std::string& arguments) {
  const std::string command = std::string(STREAMSAFE_CLI) + " " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  run_result result;
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) result.output += buffer.data();
  const int raw = pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return result;
}

const std::filesystem::path kineto_trace = std::filesystem::path(STREAMSAFE_SHARED_DATA) / "kineto_copy_train.json.gz";

TEST(ReportCli, JsonHasPerStreamFigures) {
  if (!std::filesystem::exists(kineto_trace)) GTEST_SKIP() << kineto_trace << " not present";
  const auto html = std::filesystem::temp_directory_path() / "streamsafe_report_test.html";
  const auto result = run("report --json --html " + html.string() + " " + kineto_trace.string());
  ASSERT_EQ(result.status, 0) << result.output;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(result.output);
  simdjson::dom::array streams = doc["streams"];
  ASSERT_EQ(streams.size(), 2u);
  for (simdjson::dom::element s : streams) {
    EXPECT_EQ(int64_t(s["device"]), 0);
    EXPECT_GT(double(s["busy_us"]), 0);
    EXPECT_GE(int64_t(s["kernels"]), 0);
    EXPECT_GE(int64_t(s["memcpys"]), 1);
  }
  simdjson::dom::element device = doc["devices"].at(0);
  EXPECT_GT(double(device["busy_us"]), 0);
  EXPECT_GE(double(device["idle_us"]), 0);
  EXPECT_GT(double(device["overlap"]["copy_compute_us"]), 0);
  EXPECT_TRUE(std::filesystem::file_size(html) > 1000);
}

const std::filesystem::path nccl_trace = std::filesystem::path(STREAMSAFE_SHARED_DATA) / "hta" / "hta_nccl_data.json.gz";

TEST(ReportCli, SeveralRanksGetFiguresAcrossThem) {
  if (!std::filesystem::exists(nccl_trace)) GTEST_SKIP() << nccl_trace << " not present";
  // The same rank twice: the 21 all-reduces align with no offset and every step is even.
  const auto text = run("report " + nccl_trace.string() + " " + nccl_trace.string());
  ASSERT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("== across 2 ranks: clocks aligned on 21 collectives"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("rank 1: clock +0.000 us, 21 communication kernels"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("every step even"), std::string::npos) << text.output;
  const auto json = run("report --json " + nccl_trace.string() + " " + nccl_trace.string());
  ASSERT_EQ(json.status, 0) << json.output;
  simdjson::dom::parser parser;
  simdjson::dom::element across = parser.parse(json.output)["cross_rank"];
  EXPECT_EQ(std::string_view(across["alignment"]), "collectives");
  EXPECT_EQ(int64_t(across["matched_collectives"]), 21);
  simdjson::dom::array ranks = across["ranks"];
  ASSERT_EQ(ranks.size(), 2u);
  const double communication = ranks.at(1)["communication_us"];
  const double exposed = ranks.at(1)["exposed_communication_us"];
  EXPECT_GT(communication, 0);
  EXPECT_LE(exposed, communication);
}

TEST(ReportCli, MalformedTraceNamesFileAndOffset) {
  const auto bad = std::filesystem::temp_directory_path() / "streamsafe_bad_trace.json";
  std::ofstream(bad) << R"({"traceEvents":[{"ph":"X",}]})";
  const auto result = run("report --json " + bad.string());
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.output.find(bad.string() + ": byte 26"), std::string::npos) << result.output;
}

TEST(ReportCli, MissingFileAndBadOptionsFail) {
  EXPECT_NE(run("report /nonexistent/trace.json").status, 0);
  EXPECT_NE(run("report --bogus x").status, 0);
  EXPECT_EQ(run("report --help").status, 0);
}

}  // namespace
