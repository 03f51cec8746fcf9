// The critical path through the cross-stream dependency graph: the chain of GPU ops that decided
// when the last op finished. Nodes are work ops; each op depends on the previous op of its stream
// and on the producer of the event it waited for (idle_gaps.hpp: event_wait gaps, declared or
// inferred). Walking back from the op that ends last, each step takes the predecessor that
// finished latest: that is the one the op actually waited for.
#pragma once

#include <cstddef>
#include <map>
#include <span>
#include <vector>

#include "streamsafe/monitor/idle_gaps.hpp"
#include "streamsafe/monitor/trace.hpp"

namespace streamsafe::monitor {

struct critical_path {
  std::vector<std::size_t> ops;  // indices into trace::ops, in time order
  std::size_t cross_stream_edges = 0;  // how often the path changes stream through a wait
  double length_us = 0;  // first op start to last op end
  double busy_us = 0;    // union of the path's ops: the rest is waiting on the host or on gaps
  std::map<stream_key, double> busy_by_stream;
};

/// The critical path of one device; `gaps` as find_idle_gaps returned them.
[[nodiscard]] critical_path find_critical_path(const trace& t, std::span<const idle_gap> gaps, std::int32_t device);

}  // namespace streamsafe::monitor
