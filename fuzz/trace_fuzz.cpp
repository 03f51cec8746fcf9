// Fuzzes the trace reader and the analysis behind it: any input must either parse (and then
// analyse without crashing) or be rejected with a parse_error whose offset lies inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "streamsafe/error.hpp"
#include "streamsafe/monitor/analysis.hpp"
#include "streamsafe/monitor/trace_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    const auto t = streamsafe::monitor::parse_trace(json, "fuzz");
    (void)streamsafe::monitor::analyze(t);
  } catch (const streamsafe::parse_error& e) {
    if (e.offset() > size) std::abort();  // an offset outside the input misleads the user
  }
  return 0;
}
