// Everything the monitor works out about one trace, in one call: usage over the whole run and per
// iteration, idle gaps and their causes, the critical path of each device, and the diagnosis.
// The exporters (report_json.hpp, report_text.hpp, report_html.hpp) print it.
#pragma once

#include <string>
#include <vector>

#include "streamsafe/monitor/critical_path.hpp"
#include "streamsafe/monitor/diagnosis.hpp"
#include "streamsafe/monitor/idle_gaps.hpp"
#include "streamsafe/monitor/iterations.hpp"
#include "streamsafe/monitor/trace.hpp"
#include "streamsafe/monitor/usage.hpp"

namespace streamsafe::monitor {

struct analysis_options {
  std::string iteration_marker;  // annotation name that starts an iteration; empty: find one
  gap_options gaps;
};

struct analysis {
  double origin_us = 0;  // earliest time in the trace; reported times count from it
  usage_report usage;
  iteration_plan iterations;
  std::vector<usage_report> usage_per_iteration;  // parallel to iterations.iterations
  std::vector<idle_gap> gaps;
  std::vector<critical_path> critical_paths;  // parallel to usage.devices
  std::vector<finding> findings;
};

/// One rank's trace and its analysis, as the exporters take them (one file per rank).
struct rank_report {
  std::size_t rank = 0;
  const trace& t;
  const analysis& result;
};

[[nodiscard]] analysis analyze(const trace& t, const analysis_options& options = {});

}  // namespace streamsafe::monitor
