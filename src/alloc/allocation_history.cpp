#include "alloc/allocation_history.hpp"

#include <algorithm>
#include <sstream>

namespace streamsafe::detail {

void allocation_history::append(trace_action action, std::uintptr_t address, std::size_t bytes, stream_id stream) {
  std::lock_guard lock(mutex_);
  ring_[next_ % ring_.size()] = trace_event{action, address, bytes, static_cast<std::int64_t>(stream), next_ + 1};
  ++next_;
}

std::string allocation_history::csv() const {
  std::lock_guard lock(mutex_);
  std::ostringstream out;
  out << "action,addr,size,stream\n";
  const std::size_t kept = std::min(next_, ring_.size());
  for (std::size_t i = next_ - kept; i < next_; ++i) {
    const trace_event& e = ring_[i % ring_.size()];
    out << to_string(e.action) << ',' << e.addr << ',' << e.size << ',' << e.stream << '\n';
  }
  return out.str();
}

}  // namespace streamsafe::detail
