// Running the checker over the scenario op logs in tests/hazard/oplogs/.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "streamsafe/hazard/oplog_check.hpp"

namespace streamsafe::hazard::testing {

struct check_run {
  check_summary summary;
  std::vector<hazard> hazards;
};

inline std::string oplog_path(const std::string& name) { return std::string(STREAMSAFE_OPLOG_DIR) + "/" + name + ".jsonl"; }

inline check_run check_file(const std::string& name, policy mode) {
  std::ifstream in(oplog_path(name));
  if (!in) throw std::runtime_error("cannot open " + oplog_path(name));
  check_run run;
  check_options options;
  options.mode = mode;
  options.on_hazard = [&](const hazard& found) { run.hazards.push_back(found); };
  run.summary = check_oplog(in, options);
  return run;
}

}  // namespace streamsafe::hazard::testing
