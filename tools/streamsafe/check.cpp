// streamsafe check FILE [--json] [--enforce]: runs the hazard engine over a recorded op log.
// Exit 0: no hazards; 1: hazards found (informational findings alone do not count); 2: bad input.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "progress_line.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/hazard/oplog_check.hpp"
#include "streamsafe/hazard/report_text.hpp"

namespace streamsafe::cli {

namespace {

const std::vector<option_spec> check_options_spec = {
    {"json", false, "print {\"ops\":n,\"hazards\":[...]} instead of text"},
    {"enforce", false, "apply the missing orderings as policy `enforce` would, and count them"},
    {"help", false, "print this help"},
};

// Progress is worth showing only to a person watching a large file go by.
constexpr std::uintmax_t progress_min_bytes = 64ULL << 20;

std::function<void(std::uint64_t)> progress_printer(const std::string& path) {
  std::error_code ignored;
  const std::uintmax_t total = std::filesystem::file_size(path, ignored);
  if (ignored || total < progress_min_bytes) return {};
  char size[32];
  std::snprintf(size, sizeof size, "%.1f MiB", static_cast<double>(total) / (1 << 20));
  return progress_line("check", total, size);
}

void print_json(std::uint64_t ops, const std::vector<hazard::hazard>& found) {
  std::string out = "{\"ops\":" + std::to_string(ops) + ",\"hazards\":[";
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (i > 0) out += ',';
    out += hazard::to_json(found[i]);
  }
  out += "]}\n";
  std::cout << out;
}

void print_text(const std::string& path, const hazard::check_summary& summary, const std::vector<hazard::hazard>& found) {
  for (const auto& finding : found) std::cout << hazard::describe(finding) << '\n';
  std::cout << path << ": " << summary.ops << " ops, " << summary.hazards << " hazard" << (summary.hazards == 1 ? "" : "s")
            << ", " << summary.informational << " informational\n";
  if (summary.inserted.total() > 0) {
    std::cout << "enforce inserted " << summary.inserted.stream_waits << " stream wait(s), " << summary.inserted.host_syncs
              << " host sync(s), " << summary.inserted.record_streams << " record_stream(s)\n";
  }
}

}  // namespace

int run_check(const std::vector<std::string>& argv) {
  const args parsed("check", argv, check_options_spec);
  if (parsed.has("help")) {
    std::cout << usage("check", "FILE [--json] [--enforce]", check_options_spec);
    return 0;
  }
  if (parsed.positionals().size() != 1) {
    std::cerr << "streamsafe check: expected one op log FILE (see streamsafe check --help)\n";
    return 2;
  }
  const std::string& path = parsed.positionals().front();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "streamsafe check: cannot open " << path << '\n';
    return 2;
  }
  std::vector<hazard::hazard> found;
  hazard::check_options options;
  options.mode = parsed.has("enforce") ? hazard::policy::enforce : hazard::policy::report;
  options.on_hazard = [&](const hazard::hazard& finding) { found.push_back(finding); };
  options.on_progress = progress_printer(path);
  hazard::check_summary summary;
  try {
    summary = hazard::check_oplog(in, options);
  } catch (const parse_error& e) {
    if (options.on_progress) std::cerr << '\n';
    std::cerr << "streamsafe check: " << path << ": " << e.what() << '\n';
    return 2;
  }
  if (options.on_progress) std::cerr << '\n';
  if (parsed.has("json")) {
    print_json(summary.ops, found);
  } else {
    print_text(path, summary, found);
  }
  return summary.hazards > 0 ? 1 : 0;
}

}  // namespace streamsafe::cli
