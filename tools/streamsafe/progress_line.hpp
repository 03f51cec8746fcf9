// A progress line for long work a person watches: "streamsafe COMMAND: NN% of TOTAL" on stderr,
// redrawn in place. The caller ends it with a newline once the work is done.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace streamsafe::cli {

/// Prints the share of `total` done; empty when stderr is not a terminal (scripts and pipes get
/// no progress noise). `total_text` says what the total is ("12.0 MiB", "7325367 events").
[[nodiscard]] std::function<void(std::uint64_t done)> progress_line(std::string command, std::uint64_t total,
                                                                    std::string total_text);

}  // namespace streamsafe::cli
