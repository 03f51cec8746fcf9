#include "progress_line.hpp"

#include <unistd.h>

#include <cstdio>
#include <utility>

namespace streamsafe::cli {

std::function<void(std::uint64_t)> progress_line(std::string command, std::uint64_t total, std::string total_text) {
  if (::isatty(STDERR_FILENO) == 0 || total == 0) return {};
  return [command = std::move(command), total, total_text = std::move(total_text)](std::uint64_t done) {
    std::fprintf(stderr, "\rstreamsafe %s: %3d%% of %s", command.c_str(),
                 static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total)), total_text.c_str());
  };
}

}  // namespace streamsafe::cli
