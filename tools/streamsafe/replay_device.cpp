#include "replay_device.hpp"

#include <algorithm>
#include <cstdint>

#include "streamsafe/error.hpp"

namespace streamsafe::demo {

std::uint64_t trace_peak_live(const std::vector<trace_event>& events) {
  std::uint64_t live = 0;
  std::uint64_t peak = 0;
  for (const trace_event& e : events) {
    if (e.action == trace_action::alloc) peak = std::max(peak, live += e.size);
    if (e.action == trace_action::free_requested) live -= std::min(live, e.size);
  }
  return peak;
}

Device replay_device(const std::string& backend, const std::vector<trace_event>& events, bool busy) {
  if (backend == "cuda") return Device::cuda(0);
  if (backend != "sim") throw usage_error("replay: --backend must be sim or cuda, not '" + backend + "'");
  return Device::sim(sim_options{.memory_capacity = trace_peak_live(events) * 2 + (std::size_t{1} << 30),
                                 .mode = busy ? sim_mode::threaded : sim_mode::deterministic});
}

device_headroom::device_headroom(const Device& device, const std::vector<trace_event>& events, double factor)
    : device_(device) {
  if (factor < 0) throw usage_error("replay: --headroom must not be negative");
  free_bytes_ = device_.memory().free_bytes;
  if (factor == 0) return;
  const auto wanted = static_cast<std::uint64_t>(factor * static_cast<double>(trace_peak_live(events)));
  if (free_bytes_ <= wanted) return;
  held_ = device_.allocate(free_bytes_ - wanted);
  free_bytes_ = device_.memory().free_bytes;
}

device_headroom::~device_headroom() { device_.deallocate(held_); }

}  // namespace streamsafe::demo
