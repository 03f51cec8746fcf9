#include "monitor/trace_index.hpp"

#include <algorithm>

#include "streamsafe/monitor/usage.hpp"

namespace streamsafe::monitor::detail {

launch_lookup::launch_lookup(const trace& t) : trace_(&t) {
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    if (t.calls[i].correlation >= 0) call_by_correlation_.emplace(t.calls[i].correlation, i);
  }
}

const runtime_call* launch_lookup::launch_of(const gpu_op& op) const {
  if (op.correlation < 0) return nullptr;
  auto it = call_by_correlation_.find(op.correlation);
  return it == call_by_correlation_.end() ? nullptr : &trace_->calls[it->second];
}

trace_index::trace_index(const trace& t) : trace_(&t), own_launches_(std::in_place, t), launches_(&*own_launches_) {
  for (std::size_t i = 0; i < t.ops.size(); ++i) add(i);
  sort_streams();
}

trace_index::trace_index(const trace& t, std::span<const std::size_t> op_indices, const launch_lookup& launches)
    : trace_(&t), launches_(&launches) {
  for (std::size_t i : op_indices) add(i);
  sort_streams();
}

void trace_index::sort_streams() {
  // Callers may hand ops in any order (hand-built traces, iteration selections).
  for (auto& [stream, ops] : by_stream_) {
    std::stable_sort(ops.begin(), ops.end(),
                     [&](std::size_t a, std::size_t b) { return trace_->ops[a].ts_us < trace_->ops[b].ts_us; });
  }
}

void trace_index::add(std::size_t op_index) {
  const gpu_op& op = trace_->ops[op_index];
  if (is_work(op.kind)) by_stream_[op.stream].push_back(op_index);
}

}  // namespace streamsafe::monitor::detail
