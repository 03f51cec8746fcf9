// The check subcommand is not in this build yet.
#include <iostream>

#include "commands.hpp"

namespace streamsafe::cli {
int run_check(const std::vector<std::string>&) {
  std::cerr << "streamsafe check: not in this build yet\n";
  return 2;
}
}  // namespace streamsafe::cli
