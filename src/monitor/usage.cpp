// Busy, idle, overlap, concurrency and queue depth, all from merged interval lists.
#include "streamsafe/monitor/usage.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "monitor/intervals.hpp"
#include "monitor/trace_index.hpp"

namespace streamsafe::monitor {

using detail::interval;

bool is_work(op_kind kind) {
  switch (kind) {
    case op_kind::kernel:
    case op_kind::memcpy:
    case op_kind::memset: return true;
    case op_kind::sync:
    case op_kind::event_record: return false;
  }
  return false;
}

namespace {
/// ASCII case folding: kernel names are ASCII, and std::tolower's locale lookup per character
/// was a measurable share of `report` on large traces.
char folded(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c | 0x20) : c; }

bool mentions_nccl(std::string_view name) {
  for (std::size_t i = 0; i + 4 <= name.size(); ++i) {
    if (folded(name[i]) == 'n' && folded(name[i + 1]) == 'c' && folded(name[i + 2]) == 'c' && folded(name[i + 3]) == 'l') {
      return true;
    }
  }
  return false;
}

/// classify_engine with each kernel name looked at once: a trace has far fewer names than ops.
class engine_classifier {
 public:
  explicit engine_classifier(const trace& t) : t_(t), communication_(t.names.size(), unknown) {}
  engine_class operator()(const gpu_op& op) {
    if (op.kind != op_kind::kernel || op.name >= communication_.size()) return classify_engine(t_, op);
    auto& known = communication_[op.name];
    if (known == unknown) known = mentions_nccl(t_.name_of(op)) ? 1 : 0;
    return known == 1 ? engine_class::communication : engine_class::compute;
  }

 private:
  static constexpr std::int8_t unknown = -1;
  const trace& t_;
  std::vector<std::int8_t> communication_;  // by name id
};
}  // namespace

engine_class classify_engine(const trace& t, const gpu_op& op) {
  switch (op.kind) {
    case op_kind::kernel: return mentions_nccl(t.name_of(op)) ? engine_class::communication : engine_class::compute;
    case op_kind::memcpy:
    case op_kind::memset: return engine_class::copy;
    case op_kind::sync:
    case op_kind::event_record: return engine_class::none;
  }
  return engine_class::none;
}

namespace {

struct stream_timeline {
  stream_usage usage;
  std::vector<interval> busy;  // merged
};

/// Time-weighted queue depth of one stream: +1 when the launching call returns, -1 when the op
/// ends. Ops without a known launch count from their own start.
void measure_queue_depth(const trace& t, const detail::trace_index& index, const std::vector<std::size_t>& ops,
                         double window_begin, double window_end, stream_usage& usage) {
  std::vector<std::pair<double, int>> steps;
  steps.reserve(ops.size() * 2);
  for (std::size_t i : ops) {
    const gpu_op& op = t.ops[i];
    const runtime_call* launch = index.launch_of(op);
    const double queued = launch != nullptr ? std::min(launch->end_us(), op.ts_us) : op.ts_us;
    steps.emplace_back(queued, +1);
    steps.emplace_back(op.end_us(), -1);
  }
  std::sort(steps.begin(), steps.end());  // at equal times the -1 goes first
  long depth = 0;
  double weighted = 0, last = window_begin;
  for (auto [time, delta] : steps) {
    const double clipped = std::clamp(time, window_begin, window_end);
    weighted += static_cast<double>(depth) * (clipped - last);
    last = clipped;
    depth += delta;
    usage.max_queue_depth = std::max(usage.max_queue_depth, static_cast<std::size_t>(std::max(depth, 0L)));
  }
  const double window = window_end - window_begin;
  usage.mean_queue_depth = window > 0 ? weighted / window : 0;
}

stream_timeline measure_stream(const trace& t, const stream_key& key, const std::vector<std::size_t>& ops) {
  stream_timeline timeline;
  stream_usage& u = timeline.usage;
  u.stream = key;
  if (auto it = t.stream_names.find(key); it != t.stream_names.end()) u.name = it->second;
  std::vector<interval> pieces;
  pieces.reserve(ops.size());
  for (std::size_t i : ops) {
    const gpu_op& op = t.ops[i];
    u.kernels += op.kind == op_kind::kernel;
    u.memcpys += op.kind == op_kind::memcpy;
    u.memsets += op.kind == op_kind::memset;
    pieces.push_back({op.ts_us, op.end_us()});
  }
  timeline.busy = detail::merge_intervals(std::move(pieces));
  u.busy_us = detail::total_length(timeline.busy);
  if (!timeline.busy.empty()) {
    u.first_us = timeline.busy.front().begin;
    u.last_us = timeline.busy.back().end;
  }
  return timeline;
}

/// Merges adjacent sorted runs (starting at `run_starts`) of `steps` pairwise until one is left:
/// O(n log runs), where sorting all of them would be O(n log n).
void merge_sorted_runs(std::vector<std::pair<double, int>>& steps, std::vector<std::size_t> run_starts) {
  while (run_starts.size() > 1) {
    std::vector<std::size_t> merged;
    for (std::size_t r = 0; r < run_starts.size(); r += 2) {
      merged.push_back(run_starts[r]);
      if (r + 1 == run_starts.size()) break;
      const std::size_t end = r + 2 < run_starts.size() ? run_starts[r + 2] : steps.size();
      const auto base = steps.begin();
      std::inplace_merge(base + static_cast<std::ptrdiff_t>(run_starts[r]), base + static_cast<std::ptrdiff_t>(run_starts[r + 1]),
                         base + static_cast<std::ptrdiff_t>(end));
    }
    run_starts.swap(merged);
  }
}

std::size_t max_concurrency(const std::vector<const stream_timeline*>& streams) {
  // Each stream's busy intervals are merged and in order, so its steps are a sorted run.
  std::vector<std::pair<double, int>> steps;
  std::vector<std::size_t> run_starts;
  for (const auto* s : streams) {
    run_starts.push_back(steps.size());
    for (const auto& i : s->busy) {
      steps.emplace_back(i.begin, +1);
      steps.emplace_back(i.end, -1);
    }
  }
  merge_sorted_runs(steps, std::move(run_starts));  // ends before starts at equal times: touching is not overlap
  int depth = 0, most = 0;
  for (auto [time, delta] : steps) {
    depth += delta;
    most = std::max(most, depth);
  }
  return static_cast<std::size_t>(most);
}

void measure_engines(const trace& t, const std::vector<std::size_t>& device_ops, device_usage& d) {
  std::vector<interval> compute, copy, communication;
  engine_classifier engine_of(t);
  for (std::size_t i : device_ops) {
    const gpu_op& op = t.ops[i];
    switch (engine_of(op)) {
      case engine_class::compute: compute.push_back({op.ts_us, op.end_us()}); break;
      case engine_class::copy: copy.push_back({op.ts_us, op.end_us()}); break;
      case engine_class::communication: communication.push_back({op.ts_us, op.end_us()}); break;
      case engine_class::none: break;
    }
  }
  const auto compute_m = detail::merge_intervals(std::move(compute));
  const auto copy_m = detail::merge_intervals(std::move(copy));
  const auto comm_m = detail::merge_intervals(std::move(communication));
  d.compute_us = detail::total_length(compute_m);
  d.copy_us = detail::total_length(copy_m);
  d.communication_us = detail::total_length(comm_m);
  d.copy_compute_overlap_us = detail::intersection_length(copy_m, compute_m);
  d.compute_communication_overlap_us = detail::intersection_length(compute_m, comm_m);
  d.copy_communication_overlap_us = detail::intersection_length(copy_m, comm_m);
}

device_usage measure_device(const trace& t, std::int32_t device, std::vector<stream_timeline*>& streams,
                            const std::vector<std::size_t>& device_ops) {
  device_usage d;
  d.device = device;
  d.streams = streams.size();
  std::vector<interval> all;
  for (const auto* s : streams) all.insert(all.end(), s->busy.begin(), s->busy.end());
  const auto busy = detail::merge_intervals(std::move(all));
  d.busy_us = detail::total_length(busy);
  if (!busy.empty()) {
    d.window_begin_us = busy.front().begin;
    d.window_end_us = busy.back().end;
  }
  d.idle_us = d.window_us() - d.busy_us;
  measure_engines(t, device_ops, d);
  for (std::size_t a = 0; a < streams.size(); ++a) {
    streams[a]->usage.idle_us = d.window_us() - streams[a]->usage.busy_us;
    for (std::size_t b = a + 1; b < streams.size(); ++b) {
      d.stream_pairs.push_back({streams[a]->usage.stream, streams[b]->usage.stream,
                                detail::intersection_length(streams[a]->busy, streams[b]->busy)});
    }
  }
  d.max_concurrent_streams = max_concurrency({streams.begin(), streams.end()});
  return d;
}

usage_report measure(const trace& t, const detail::trace_index& index) {
  usage_report report;
  std::map<std::int32_t, std::vector<stream_timeline*>> by_device;
  std::map<std::int32_t, std::vector<std::size_t>> ops_by_device;
  std::vector<stream_timeline> timelines;
  timelines.reserve(index.work_by_stream().size());
  for (const auto& [key, ops] : index.work_by_stream()) {
    timelines.push_back(measure_stream(t, key, ops));
    auto& device_ops = ops_by_device[key.device];
    device_ops.insert(device_ops.end(), ops.begin(), ops.end());
  }
  for (auto& timeline : timelines) by_device[timeline.usage.stream.device].push_back(&timeline);
  for (auto& [device, streams] : by_device) {
    report.devices.push_back(measure_device(t, device, streams, ops_by_device[device]));
    for (auto* s : streams) {
      measure_queue_depth(t, index, index.work_by_stream().at(s->usage.stream), report.devices.back().window_begin_us,
                          report.devices.back().window_end_us, s->usage);
    }
  }
  for (auto& timeline : timelines) report.streams.push_back(std::move(timeline.usage));
  return report;
}

}  // namespace

usage_report measure_usage(const trace& t) { return measure(t, detail::trace_index(t)); }

usage_report measure_usage(const trace& t, std::span<const std::size_t> op_indices) {
  return measure(t, detail::trace_index(t, op_indices, detail::launch_lookup(t)));
}

std::vector<usage_report> measure_usage_each(const trace& t, std::span<const std::vector<std::size_t>> selections) {
  const detail::launch_lookup launches(t);  // once, not once per selection
  std::vector<usage_report> reports;
  reports.reserve(selections.size());
  for (const auto& ops : selections) reports.push_back(measure(t, detail::trace_index(t, ops, launches)));
  return reports;
}

}  // namespace streamsafe::monitor
