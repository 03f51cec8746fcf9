#include "monitor/collect/trace_recorder.hpp"

#include <algorithm>

#include "monitor/trace_index.hpp"

namespace streamsafe::monitor::detail {

void trace_recorder::add_op(const op_record& op) {
  gpu_op kept;
  kept.stream = op.stream;
  kept.kind = op.kind;
  kept.ts_us = op.ts_us;
  kept.dur_us = op.dur_us;
  kept.name = trace_.names.intern(op.name);
  kept.correlation = op.correlation;
  kept.bytes = op.bytes;
  kept.src = op.src;
  kept.dst = op.dst;
  trace_.ops.push_back(kept);
  enqueued_.push_back(op.enqueued_us);  // < 0: unknown here, see resolve_enqueue_times
}

void trace_recorder::add_call(std::int64_t thread, call_kind kind, std::string_view name, double ts_us, double dur_us,
                              std::int64_t correlation) {
  trace_.calls.push_back({thread, kind, ts_us, dur_us, trace_.names.intern(name), correlation});
}

void trace_recorder::add_annotation(const annotation& range, std::string_view name) {
  trace_.annotations.push_back(range);
  trace_.annotations.back().name = trace_.names.intern(name);
}

void trace_recorder::note_record(event_id event, stream_key stream, double host_us) {
  last_record_[event] = records_.size();
  records_.push_back({stream, host_us});
}

void trace_recorder::note_wait(stream_key waiter, event_id event, double host_us) {
  const auto recorded = last_record_.find(event);
  if (recorded == last_record_.end()) return;
  waits_.push_back({{waiter, host_us}, recorded->second});
}

void trace_recorder::resolve_enqueue_times() {
  // CUPTI's device records carry no launch time, only a correlation id shared with the runtime
  // call that enqueued them. Without the call, the op's start stands in: the host may run far
  // ahead of the GPU, so markers would then be placed too early in their stream.
  const launch_lookup launches(trace_);
  for (std::size_t i = 0; i < enqueued_.size(); ++i) {
    if (enqueued_[i] >= 0) continue;
    const runtime_call* launch = launches.launch_of(trace_.ops[i]);
    enqueued_[i] = launch != nullptr ? launch->ts_us : trace_.ops[i].ts_us;
  }
}

trace_recorder::stream_progress trace_recorder::index_progress() const {
  stream_progress progress;
  for (std::size_t i = 0; i < trace_.ops.size(); ++i) {
    progress[trace_.ops[i].stream].push_back({enqueued_[i], trace_.ops[i].end_us()});
  }
  for (auto& [stream, steps] : progress) {
    std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 1; i < steps.size(); ++i) steps[i].second = std::max(steps[i].second, steps[i - 1].second);
  }
  return progress;
}

double trace_recorder::reached_at(const marker& m, const stream_progress& progress) {
  const auto found = progress.find(m.stream);
  if (found == progress.end()) return m.host_us;
  const auto& steps = found->second;
  // The last op enqueued before the marker's call; ends are a running maximum.
  const auto after = std::upper_bound(steps.begin(), steps.end(), m.host_us,
                                      [](double host, const auto& step) { return host < step.first; });
  return after == steps.begin() ? m.host_us : std::max(m.host_us, std::prev(after)->second);
}

void trace_recorder::materialize_dependencies() {
  const auto record_name = trace_.names.intern("Event Record");
  const auto wait_name = trace_.names.intern("Stream Wait Event");
  resolve_enqueue_times();
  const auto progress = index_progress();
  std::vector<std::size_t> record_op(records_.size());
  for (std::size_t r = 0; r < records_.size(); ++r) {
    gpu_op op;
    op.stream = records_[r].stream;
    op.kind = op_kind::event_record;
    op.ts_us = reached_at(records_[r], progress);
    op.name = record_name;
    record_op[r] = trace_.ops.size();
    trace_.ops.push_back(op);
  }
  for (const auto& wait : waits_) {
    gpu_op op;
    op.stream = wait.at.stream;
    op.kind = op_kind::sync;
    op.ts_us = reached_at(wait.at, progress);
    // The wait lasts until the recorded work is done, if that is later.
    op.dur_us = std::max(0.0, trace_.ops[record_op[wait.record]].ts_us - op.ts_us);
    op.name = wait_name;
    trace_.dependencies.push_back({record_op[wait.record], trace_.ops.size()});
    trace_.ops.push_back(op);
  }
}

trace trace_recorder::finish(const std::map<stream_key, std::string>& names, std::string device_name,
                             std::int32_t device) && {
  materialize_dependencies();
  trace_.stream_names = names;
  trace_.device_names[device] = std::move(device_name);
  sort_by_time(trace_);
  return std::move(trace_);
}

}  // namespace streamsafe::monitor::detail
