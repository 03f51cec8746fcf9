// Rule too_many_streams: streams that never run at the same time only add event and scheduling
// overhead.
#include "monitor/rules/rules.hpp"

namespace streamsafe::monitor::detail {

std::optional<finding> check_too_many_streams(const diagnosis_input& in) {
  finding f{finding_kind::too_many_streams, 0, 0, {}, {}, {}};
  for (const auto& device : in.usage.devices) {
    if (device.streams < 2 || device.max_concurrent_streams >= device.streams) continue;
    f.occurrences += device.streams - device.max_concurrent_streams;
    if (!f.evidence.empty()) f.evidence += "; ";
    f.evidence += "device " + std::to_string(device.device) + ": " + std::to_string(device.streams) +
                  " streams had work but at most " + std::to_string(device.max_concurrent_streams) +
                  " were ever busy at once";
  }
  if (f.occurrences == 0) return std::nullopt;
  f.fix = "use as many streams as there is independent work that can run at once (see max_concurrent_streams); "
          "merge the others, or remove the waits that keep them apart";
  return f;
}

}  // namespace streamsafe::monitor::detail
