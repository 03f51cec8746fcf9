// The agents of the model: the host (slot 0) and the streams, each with its vector clock and
// name. Enqueue ordering (a stream op follows everything the host did or observed) is a join of
// the host clock into the stream's; a generation counter on the host clock makes that join happen
// only when the host clock changed, so the common stream op stays O(1).
//
// Slots are recycled, so clocks stay as long as the most streams alive at once, not the number
// ever created (docs/hazards.md, "Bounded memory"). A destroyed stream keeps its slot until the
// host has seen all its work finish (every later op follows the host, so no later access can race
// with the stream's recorded accesses any more) and no live allocation names it. The next stream
// in that slot continues the slot's epochs: a clock that covers one of its accesses covers the
// old stream's accesses too, which is true of every later clock already.
#pragma once

#include <cstdint>
#include <optional>
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
  bool destroyed = false;
  std::uint32_t allocations = 0;  // live allocations made on or recorded with this stream
  std::uint32_t device = 0;       // engine::tag_device's number; 0: none given
};

class agent_table {
 public:
  agent_table();

  /// The slot of `stream`, created on first sight (in a recycled slot when one is free).
  [[nodiscard]] agent_slot slot_of(stream_id stream);
  /// The slot of a live `stream`, if it has one yet.
  [[nodiscard]] std::optional<agent_slot> find(stream_id stream) const;
  /// The same, or else the slot of a destroyed stream of that id not yet recycled.
  [[nodiscard]] std::optional<agent_slot> find_any(stream_id stream) const;
  /// The clock `stream`'s next op will have: its own, joined with the host's if that changed.
  /// Changes nothing: `scratch` holds the join when one is needed.
  [[nodiscard]] const vector_clock& clock_at_enqueue(agent_slot stream, vector_clock& scratch) const;
  [[nodiscard]] agent_state& at(agent_slot slot) { return agents_[index(slot)]; }
  [[nodiscard]] const agent_state& at(agent_slot slot) const { return agents_[index(slot)]; }
  [[nodiscard]] vector_clock& host_clock() { return agents_[0].clock; }
  [[nodiscard]] const vector_clock& host_clock() const { return agents_[0].clock; }
  /// Slots in use or waiting to be recycled (the length of the longest clock).
  [[nodiscard]] std::size_t size() const noexcept { return agents_.size(); }

  /// A stream op is being enqueued: the stream's clock joins the host's if that changed.
  void enqueue(agent_slot stream);
  /// Must be called after every change to the host clock.
  void host_changed() noexcept { ++host_generation_; }

  /// The stream is gone: a later op naming its id is a new stream. Its slot is recycled once
  /// nothing can confuse its epochs with the next owner's. Unknown ids are ignored.
  void destroy(stream_id stream);
  /// A live allocation starts or stops naming `stream` (its allocation stream or a recorded one).
  void hold(agent_slot stream) noexcept { ++at(stream).allocations; }
  void release(agent_slot stream);

  /// "host", the stream's name, or "stream N" for an unnamed stream; " (destroyed)" follows the
  /// name of a destroyed stream.
  [[nodiscard]] std::string display_name(agent_slot slot) const;

 private:
  [[nodiscard]] bool recyclable(agent_slot slot) const noexcept;
  [[nodiscard]] agent_slot take_free_slot();
  void collect_destroyed();

  std::vector<agent_state> agents_;
  std::unordered_map<std::uint64_t, agent_slot> slots_;  // live streams only
  std::vector<agent_slot> destroyed_;                    // not yet recyclable
  std::vector<agent_slot> free_;                         // recyclable
  std::uint64_t host_generation_ = 1;  // streams start at 0: their first op joins the host
  std::uint64_t collected_at_ = 0;     // host generation of the last scan of destroyed_
  bool released_since_scan_ = false;   // an allocation let go of a destroyed stream since
};

}  // namespace streamsafe::hazard::detail
