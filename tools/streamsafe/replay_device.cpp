#include "replay_device.hpp"

#include <algorithm>
#include <cstdint>

#include "streamsafe/error.hpp"

namespace streamsafe::demo {

Device replay_device(const std::string& backend, const std::vector<trace_event>& events, bool busy) {
  if (backend == "cuda") return Device::cuda(0);
  if (backend != "sim") throw usage_error("replay: --backend must be sim or cuda, not '" + backend + "'");
  std::uint64_t live = 0;
  std::uint64_t peak = 0;
  for (const trace_event& e : events) {
    if (e.action == trace_action::alloc) peak = std::max(peak, live += e.size);
    if (e.action == trace_action::free_requested) live -= std::min(live, e.size);
  }
  return Device::sim(sim_options{.memory_capacity = peak * 2 + (std::size_t{1} << 30),
                                 .mode = busy ? sim_mode::threaded : sim_mode::deterministic});
}

}  // namespace streamsafe::demo
