// What the engine does with what it sees, and what `enforce` inserts.
#pragma once

#include <cstdint>

#include "streamsafe/hazard/ids.hpp"

namespace streamsafe::hazard {

enum class policy : std::uint8_t {
  off,      // track nothing; every engine call returns at once
  report,   // track, and hand each hazard to the sink (collected by default)
  enforce,  // track, and before each access apply the missing orderings as if inserted
};

/// An ordering that `enforce` found missing and applied to its model. A runtime integration
/// inserts the real thing: a wait on a freshly recorded event, a host sync, a record_stream.
enum class insertion_kind : std::uint8_t {
  stream_wait,    // `waiter` waits on an event recorded on `producer` now
  host_sync,      // the host synchronizes with `producer` (event or stream sync) now
  record_stream,  // record_stream(block, producer) before the free of `block`
};

struct insertion {
  insertion_kind kind = insertion_kind::stream_wait;
  stream_id waiter{};    // stream_wait only
  stream_id producer{};  // the stream whose work must be waited for or recorded
  std::uint64_t block = 0;  // record_stream only: the allocation's first byte
  friend constexpr bool operator==(const insertion&, const insertion&) = default;
};

/// How many orderings `enforce` inserted so far, by kind: what the user should write explicitly.
struct insertion_counts {
  std::uint64_t stream_waits = 0;
  std::uint64_t host_syncs = 0;
  std::uint64_t record_streams = 0;
  [[nodiscard]] constexpr std::uint64_t total() const noexcept { return stream_waits + host_syncs + record_streams; }
};

}  // namespace streamsafe::hazard
