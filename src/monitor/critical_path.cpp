#include "streamsafe/monitor/critical_path.hpp"

#include <algorithm>
#include <unordered_map>

#include "monitor/intervals.hpp"
#include "monitor/trace_index.hpp"

namespace streamsafe::monitor {

critical_path find_critical_path(const trace& t, std::span<const idle_gap> gaps, std::int32_t device) {
  const detail::trace_index index(t);
  std::unordered_map<std::size_t, std::size_t> stream_predecessor;
  std::optional<std::size_t> last;
  for (const auto& [stream, ops] : index.work_by_stream()) {
    if (stream.device != device) continue;
    for (std::size_t i = 1; i < ops.size(); ++i) stream_predecessor[ops[i]] = ops[i - 1];
    for (std::size_t op : ops) {
      if (!last || t.ops[op].end_us() > t.ops[*last].end_us()) last = op;
    }
  }
  std::unordered_map<std::size_t, std::size_t> producer_of;
  for (const auto& gap : gaps) {
    if (gap.cause == gap_cause::event_wait && gap.producer_op) producer_of[gap.after_op] = *gap.producer_op;
  }
  critical_path path;
  for (std::optional<std::size_t> node = last; node;) {
    path.ops.push_back(*node);
    std::optional<std::size_t> next;
    if (auto it = stream_predecessor.find(*node); it != stream_predecessor.end()) next = it->second;
    if (auto it = producer_of.find(*node); it != producer_of.end()) {
      // Prefer the producer when it finished later: the op was waiting for it, not its stream.
      if (!next || t.ops[it->second].end_us() > t.ops[*next].end_us()) {
        next = it->second;
        ++path.cross_stream_edges;
      }
    }
    node = next;
  }
  std::reverse(path.ops.begin(), path.ops.end());
  if (path.ops.empty()) return path;
  path.length_us = t.ops[path.ops.back()].end_us() - t.ops[path.ops.front()].ts_us;
  std::map<stream_key, std::vector<detail::interval>> pieces;
  std::vector<detail::interval> all;
  for (std::size_t op : path.ops) {
    pieces[t.ops[op].stream].push_back({t.ops[op].ts_us, t.ops[op].end_us()});
    all.push_back({t.ops[op].ts_us, t.ops[op].end_us()});
  }
  path.busy_us = detail::total_length(detail::merge_intervals(std::move(all)));
  for (auto& [stream, intervals] : pieces) {
    path.busy_by_stream[stream] = detail::total_length(detail::merge_intervals(std::move(intervals)));
  }
  return path;
}

}  // namespace streamsafe::monitor
