// Exporters: the Chrome trace reads back to the same figures, and the JSON report parses and
// carries the figures of the analysis.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <sstream>

#include "streamsafe/monitor/analysis.hpp"
#include "streamsafe/monitor/chrome_trace.hpp"
#include "streamsafe/monitor/report_html.hpp"
#include "streamsafe/monitor/report_json.hpp"
#include "streamsafe/monitor/report_text.hpp"
#include "streamsafe/monitor/trace_reader.hpp"
#include "trace_builder.hpp"

namespace streamsafe::monitor {
namespace {

using testing::trace_builder;

trace sample() {
  return trace_builder()
      .kernel(1, 0, 10)
      .copy(2, 20, 25, "Memcpy HtoD (Pageable -> Device)")
      .call("cudaStreamWaitEvent", 3, 1)
      .call("cudaLaunchKernel", 5, 2, 2)
      .kernel(1, 50.125, 10, 2)
      .marker("step", 0, 40)
      .marker("step", 40, 40)
      .build();
}

std::string chrome_of(const trace& t) {
  std::ostringstream out;
  write_chrome_trace(out, t, analyze(t).gaps);
  return out.str();
}

TEST(ChromeExport, RoundTripKeepsTheFigures) {
  const auto original = sample();
  const auto back = parse_trace(chrome_of(original), "exported");
  ASSERT_EQ(back.ops.size(), original.ops.size());
  ASSERT_EQ(back.calls.size(), original.calls.size());
  const auto a = analyze(original), b = analyze(back);
  ASSERT_EQ(a.usage.streams.size(), b.usage.streams.size());
  for (std::size_t i = 0; i < a.usage.streams.size(); ++i) {
    EXPECT_EQ(a.usage.streams[i].stream, b.usage.streams[i].stream);
    EXPECT_DOUBLE_EQ(a.usage.streams[i].busy_us, b.usage.streams[i].busy_us);
  }
  EXPECT_DOUBLE_EQ(a.usage.devices[0].copy_compute_overlap_us, b.usage.devices[0].copy_compute_overlap_us);
  ASSERT_EQ(a.gaps.size(), b.gaps.size());
  for (std::size_t i = 0; i < a.gaps.size(); ++i) EXPECT_EQ(a.gaps[i].cause, b.gaps[i].cause);
  EXPECT_EQ(a.findings.size(), b.findings.size());
  EXPECT_EQ(back.ops[1].src, memory_kind::pageable);
}

TEST(ChromeExport, DrawsAFlowFromProducerToWaiter) {
  const auto json = chrome_of(sample());
  EXPECT_NE(json.find(R"("ph":"s","cat":"stream_wait")"), std::string::npos);
  EXPECT_NE(json.find(R"("ph":"f","bp":"e","cat":"stream_wait")"), std::string::npos);
  EXPECT_NE(json.find(R"("name":"thread_name")"), std::string::npos);
}

TEST(ChromeExport, DeclaredDependenciesSurviveTheRoundTrip) {
  auto t = trace_builder().copy(2, 0, 30).op(op_kind::event_record, 2, 30, 0, "Event Record", 900)
               .kernel(1, 0, 5).op(op_kind::sync, 1, 6, 0, "Stream Wait Event").kernel(1, 32, 8).build();
  std::size_t record = 0, wait = 0;
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    if (t.ops[i].kind == op_kind::event_record) record = i;
    if (t.ops[i].kind == op_kind::sync) wait = i;
  }
  t.dependencies.push_back({record, wait});
  const auto back = parse_trace(chrome_of(t));
  ASSERT_EQ(back.dependencies.size(), 1u);
  const auto gaps = find_idle_gaps(back);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].cause, gap_cause::event_wait);
  EXPECT_EQ(gaps[0].wait, wait_evidence::declared);
  EXPECT_EQ(back.ops[*gaps[0].producer_op].kind, op_kind::memcpy);
}

TEST(ReportJson, ParsesAndCarriesTheFigures) {
  const auto t = sample();
  const auto a = analyze(t);
  const rank_report ranks[] = {{0, t, a}};
  std::ostringstream out;
  write_report_json(out, ranks);
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(out.str());
  simdjson::dom::array streams = doc["streams"];
  ASSERT_EQ(streams.size(), 2u);
  for (simdjson::dom::element s : streams) {
    const auto stream = int64_t(s["stream"]);
    const auto& expected = a.usage.streams[stream == 1 ? 0 : 1];
    EXPECT_DOUBLE_EQ(double(s["busy_us"]), expected.busy_us);
    EXPECT_EQ(uint64_t(s["kernels"]), expected.kernels);
    EXPECT_EQ(uint64_t(s["memcpys"]), expected.memcpys);
    EXPECT_EQ(int64_t(s["device"]), 0);
  }
  simdjson::dom::element device = doc["devices"].at(0);
  EXPECT_DOUBLE_EQ(double(device["busy_us"]), a.usage.devices[0].busy_us);
  EXPECT_DOUBLE_EQ(double(device["idle_us"]), a.usage.devices[0].idle_us);
  EXPECT_DOUBLE_EQ(double(device["overlap"]["copy_compute_us"]), a.usage.devices[0].copy_compute_overlap_us);
  EXPECT_EQ(simdjson::dom::array(doc["findings"]).size(), a.findings.size());
}

TEST(ReportText, AndHtmlMentionTheFindings) {
  const auto t = sample();
  const auto a = analyze(t);
  const rank_report ranks[] = {{0, t, a}};
  std::ostringstream text, html;
  write_report_text(text, ranks);
  write_report_html(html, ranks);
  EXPECT_NE(text.str().find("pageable_copy"), std::string::npos);
  EXPECT_NE(html.str().find("<svg"), std::string::npos);
  EXPECT_NE(html.str().find("pageable_copy"), std::string::npos);
  EXPECT_EQ(html.str().find("<script"), std::string::npos);  // self-contained, static
}

}  // namespace
}  // namespace streamsafe::monitor
