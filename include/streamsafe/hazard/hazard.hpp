// A hazard report as plain data: what kind, the two ops involved (names already resolved), the
// bytes, and what the fix needs. No logic lives here; report_text.hpp turns it into words.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "streamsafe/hazard/ids.hpp"

namespace streamsafe::hazard {

enum class hazard_kind : std::uint8_t {
  race,             // two streams touch the same bytes, one writes, neither ordered: a missing wait
  reuse_race,       // an old-lifetime access unordered with a new-lifetime one: a missing record_stream,
                    // or a block used off its allocation stream without waiting for that stream
  use_after_free,   // bytes touched after the host freed them and before they were allocated again
  host_race,        // like race, with the host on one side: a missing sync before a host access
  wait_unrecorded,  // informational: a wait on an event never recorded (a no-op in CUDA)
  redundant_wait,   // informational: a wait already implied by earlier ordering (can be pruned)
};

/// True for kinds that describe a wasteful or suspicious program, not a wrong one.
[[nodiscard]] constexpr bool is_informational(hazard_kind kind) noexcept {
  return kind == hazard_kind::wait_unrecorded || kind == hazard_kind::redundant_wait;
}

/// The JSON/CLI name of a kind: "race", "reuse_race", ...
[[nodiscard]] std::string_view kind_name(hazard_kind kind) noexcept;

/// What an op did to the bytes in question (or that it was a free or a wait).
enum class op_role : std::uint8_t { read, write, free, wait };

/// One op of a report, resolved to text.
struct op_ref {
  std::uint64_t line = 0;  // the op's line (op log) or op number (live program)
  std::string op;          // op name: "normalize", "copy", "free", "stream_wait_event", ...
  std::string stream;      // stream name, or "host"
  std::string loc;         // "file:line" when known, else empty
  op_role role = op_role::read;
};

/// One finding, found at the later op (`second`). The engine reports each (kind, pair of call
/// sites) once: `count` says how many times it was found (in the collection, up to now).
struct hazard {
  hazard_kind kind = hazard_kind::race;
  op_ref first;              // the earlier op (for wait_* kinds: the wait itself)
  op_ref second;             // the later op, where the hazard was found
  byte_range range;          // the conflicting bytes (hull when they are several pieces)
  std::uint64_t block = 0;   // reuse_race, use_after_free: the freed allocation's first byte
  op_ref free_op;            // reuse_race, use_after_free: the free that ended the old lifetime
  /// reuse_race of a block used off its allocation stream: the allocation that `second` is not
  /// ordered after (empty `op` when the release point missed `first`: a missing record_stream).
  op_ref alloc_op;
  std::uint64_t event = 0;   // wait_*: the event waited on
  std::uint64_t count = 1;   // times this kind was found between these two call sites
};

}  // namespace streamsafe::hazard
