// streamsafe report TRACE... : how the GPU streams of a run were used, from our traces or PyTorch
// profiler (Kineto) traces, plain or gzip'd, one file per rank.
#include <fstream>
#include <iostream>
#include <list>

#include "args.hpp"
#include "commands.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/monitor/analysis.hpp"
#include "streamsafe/monitor/chrome_trace.hpp"
#include "streamsafe/monitor/report_html.hpp"
#include "streamsafe/monitor/report_json.hpp"
#include "streamsafe/monitor/report_text.hpp"
#include "streamsafe/monitor/trace_reader.hpp"

namespace streamsafe::cli {

namespace {

const std::vector<option_spec> report_options = {
    {"json", false, "print one JSON object for machines (fields: docs/report.md)"},
    {"html", true, "also write a self-contained HTML report (timeline + tables) to FILE"},
    {"chrome", true, "also write a Chrome/Perfetto trace with dependency arrows to FILE (single rank)"},
    {"iteration", true, "annotation name that starts an iteration (default: ProfilerStep#, else inferred)"},
    {"min-gap-us", true, "ignore idle gaps shorter than this many microseconds (default 1)"},
    {"help", false, "show this help"},
};

std::ofstream open_output(const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw usage_error("streamsafe report: cannot write " + path);
  return out;
}

}  // namespace

int run_report(const std::vector<std::string>& argv) {
  const args parsed("report", argv, report_options);
  if (parsed.has("help") || parsed.positionals().empty()) {
    std::cout << usage("report", "TRACE... [--json] [--html FILE] [--chrome FILE]", report_options);
    return parsed.has("help") ? 0 : 2;
  }
  monitor::analysis_options options;
  options.iteration_marker = parsed.value_or("iteration", "");
  options.gaps.min_gap_us = static_cast<double>(parsed.unsigned_or("min-gap-us", 1));

  // std::list: rank_report holds references, so the traces and analyses must not move.
  std::list<monitor::trace> traces;
  std::list<monitor::analysis> results;
  std::vector<monitor::rank_report> ranks;
  for (const auto& file : parsed.positionals()) {
    traces.push_back(monitor::read_trace(file));
    results.push_back(monitor::analyze(traces.back(), options));
    ranks.push_back({ranks.size(), traces.back(), results.back()});
  }
  if (auto html = parsed.value("html")) {
    auto out = open_output(*html);
    monitor::write_report_html(out, ranks);
  }
  if (auto chrome = parsed.value("chrome")) {
    if (ranks.size() != 1) throw usage_error("streamsafe report: --chrome takes exactly one TRACE");
    auto out = open_output(*chrome);
    monitor::write_chrome_trace(out, traces.front(), results.front().gaps);
  }
  if (parsed.has("json")) {
    monitor::write_report_json(std::cout, ranks);
  } else {
    monitor::write_report_text(std::cout, ranks);
  }
  return 0;
}

}  // namespace streamsafe::cli
