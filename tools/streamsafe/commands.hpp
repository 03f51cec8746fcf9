// The subcommands of the `streamsafe` CLI. Each takes the words after its name and returns the
// process exit code; each prints its own --help.
#pragma once

#include <string>
#include <vector>

namespace streamsafe::cli {

int run_demo(const std::vector<std::string>& argv);    // demo.cpp
int run_check(const std::vector<std::string>& argv);   // check.cpp
int run_replay(const std::vector<std::string>& argv);  // replay.cpp
int run_report(const std::vector<std::string>& argv);  // report.cpp
int run_pipeline(const std::vector<std::string>& argv);  // pipeline.cpp

}  // namespace streamsafe::cli
