// The agents of the model: the host (slot 0) and the streams (slots 1, 2, ... by first sight),
// each with its vector clock and name. Enqueue ordering (a stream op follows everything the host
// did or observed) is a join of the host clock into the stream's; a generation counter on the
// host clock makes that join happen only when the host clock changed, so the common stream op
// stays O(1).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hazard/vector_clock.hpp"
#include "streamsafe/hazard/ids.hpp"

namespace streamsafe::hazard::detail {

struct agent_state {
  vector_clock clock;
  std::uint64_t host_generation_seen = 0;
  stream_id id{};
  std::string name;  // empty: unnamed
};

class agent_table {
 public:
  agent_table();

  /// The slot of `stream`, created on first sight.
  [[nodiscard]] agent_slot slot_of(stream_id stream);
  [[nodiscard]] agent_state& at(agent_slot slot) { return agents_[index(slot)]; }
  [[nodiscard]] const agent_state& at(agent_slot slot) const { return agents_[index(slot)]; }
  [[nodiscard]] vector_clock& host_clock() { return agents_[0].clock; }
  [[nodiscard]] std::size_t size() const noexcept { return agents_.size(); }

  /// A stream op is being enqueued: the stream's clock joins the host's if that changed.
  void enqueue(agent_slot stream);
  /// Must be called after every change to the host clock.
  void host_changed() noexcept { ++host_generation_; }

  /// "host", the stream's name, or "stream N" for an unnamed stream.
  [[nodiscard]] std::string display_name(agent_slot slot) const;

 private:
  std::vector<agent_state> agents_;
  std::unordered_map<std::uint64_t, agent_slot> slots_;
  std::uint64_t host_generation_ = 1;  // streams start at 0: their first op joins the host
};

}  // namespace streamsafe::hazard::detail
