// Fuzzes the op log reader and the engine behind it: any input either checks or fails with
// parse_error; anything else (a crash, another exception, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "streamsafe/error.hpp"
#include "streamsafe/hazard/oplog_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  streamsafe::hazard::check_options options;
  options.mode = size % 2 == 0 ? streamsafe::hazard::policy::report : streamsafe::hazard::policy::enforce;
  options.on_hazard = [](const streamsafe::hazard::hazard&) {};
  try {
    (void)streamsafe::hazard::check_oplog(in, options);
  } catch (const streamsafe::parse_error&) {
    // bad input, reported with its line: the expected outcome for most inputs
  }
  return 0;
}
