#include "hazard/agents.hpp"

#include <algorithm>

namespace streamsafe::hazard::detail {

agent_table::agent_table() { agents_.emplace_back(); }

agent_slot agent_table::slot_of(stream_id stream) {
  const auto key = static_cast<std::uint64_t>(stream);
  if (auto it = slots_.find(key); it != slots_.end()) return it->second;
  const agent_slot slot = take_free_slot();
  at(slot).id = stream;
  slots_.emplace(key, slot);
  return slot;
}

std::optional<agent_slot> agent_table::find(stream_id stream) const {
  if (auto it = slots_.find(static_cast<std::uint64_t>(stream)); it != slots_.end()) return it->second;
  return std::nullopt;
}

std::optional<agent_slot> agent_table::find_any(stream_id stream) const {
  if (auto live = find(stream)) return live;
  const auto it = std::find_if(destroyed_.begin(), destroyed_.end(), [&](agent_slot slot) { return at(slot).id == stream; });
  return it != destroyed_.end() ? std::optional(*it) : std::nullopt;
}

const vector_clock& agent_table::clock_at_enqueue(agent_slot stream, vector_clock& scratch) const {
  const auto& agent = at(stream);
  if (stream == host_slot || agent.host_generation_seen == host_generation_) return agent.clock;
  scratch = agent.clock;
  scratch.join(host_clock());
  return scratch;
}

// A recycled slot starts with an empty clock except its own entry, which continues where the
// previous owner stopped; its first op joins the host, which has seen all of that owner's work.
agent_slot agent_table::take_free_slot() {
  if (free_.empty()) collect_destroyed();
  if (free_.empty()) {
    agents_.emplace_back();
    return agent_slot{static_cast<std::uint32_t>(agents_.size() - 1)};
  }
  const agent_slot slot = free_.back();
  free_.pop_back();
  const epoch last = at(slot).clock.get(slot);
  at(slot) = agent_state{};
  at(slot).clock.restart(slot, last);
  return slot;
}

bool agent_table::recyclable(agent_slot slot) const noexcept {
  const agent_state& agent = at(slot);
  return agent.allocations == 0 && host_clock().covers(slot, agent.clock.get(slot));
}

// Scans only when something that decides recyclability changed since the last scan.
void agent_table::collect_destroyed() {
  if (collected_at_ == host_generation_ && !released_since_scan_) return;
  collected_at_ = host_generation_;
  released_since_scan_ = false;
  const auto moved = std::stable_partition(destroyed_.begin(), destroyed_.end(),
                                           [&](agent_slot slot) { return !recyclable(slot); });
  free_.insert(free_.end(), moved, destroyed_.end());
  destroyed_.erase(moved, destroyed_.end());
}

void agent_table::destroy(stream_id stream) {
  const auto it = slots_.find(static_cast<std::uint64_t>(stream));
  if (it == slots_.end()) return;
  at(it->second).destroyed = true;
  destroyed_.push_back(it->second);
  slots_.erase(it);
  released_since_scan_ = true;
}

void agent_table::release(agent_slot stream) {
  agent_state& agent = at(stream);
  --agent.allocations;
  if (agent.destroyed && agent.allocations == 0) released_since_scan_ = true;
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
  const std::string name = agent.name.empty() ? "stream " + std::to_string(static_cast<std::uint64_t>(agent.id)) : agent.name;
  return agent.destroyed ? name + " (destroyed)" : name;  // its id may name a new stream now
}

}  // namespace streamsafe::hazard::detail
