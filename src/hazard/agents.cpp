#include "hazard/agents.hpp"

namespace streamsafe::hazard::detail {

agent_table::agent_table() { agents_.emplace_back(); }

agent_slot agent_table::slot_of(stream_id stream) {
  const auto key = static_cast<std::uint64_t>(stream);
  if (auto it = slots_.find(key); it != slots_.end()) return it->second;
  const agent_slot slot{static_cast<std::uint32_t>(agents_.size())};
  agents_.push_back(agent_state{{}, 0, stream, {}});
  slots_.emplace(key, slot);
  return slot;
}

void agent_table::enqueue(agent_slot stream) {
  auto& agent = at(stream);
  if (agent.host_generation_seen == host_generation_) return;
  agent.clock.join(host_clock());
  agent.host_generation_seen = host_generation_;
}

std::string agent_table::display_name(agent_slot slot) const {
  if (slot == host_slot) return "host";
  const auto& agent = at(slot);
  if (!agent.name.empty()) return agent.name;
  return "stream " + std::to_string(static_cast<std::uint64_t>(agent.id));
}

}  // namespace streamsafe::hazard::detail
