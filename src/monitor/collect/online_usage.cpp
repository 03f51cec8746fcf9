#include "monitor/collect/online_usage.hpp"

#include <algorithm>

namespace streamsafe::monitor::detail {

std::pair<double, double> online_usage::coverage::extend(double begin, double end) {
  const double fresh_begin = started ? std::max(begin, covered_until) : begin;
  started = true;
  if (end <= fresh_begin) return {fresh_begin, fresh_begin};
  covered_until = end;
  total += end - fresh_begin;
  return {fresh_begin, end};
}

void online_usage::window_spans::add(std::size_t index, double begin, double end, bool first_op) {
  if (first_op || index != window) {
    if (!first_op) closed_us += last - first;
    window = index;
    first = begin;
    last = end;
    return;
  }
  last = std::max(last, end);
}

void online_usage::open_window(double host_us) { window_starts_.push_back(host_us); }

/// 0 before the first open_window time, then the number of windows opened at or before `begin`.
std::size_t online_usage::window_of(double begin) const {
  return static_cast<std::size_t>(std::upper_bound(window_starts_.begin(), window_starts_.end(), begin) -
                                  window_starts_.begin());
}

engine_class online_usage::engine_of(const op_record& op) {
  gpu_op probe;
  probe.kind = op.kind;
  if (op.kind == op_kind::kernel) probe.name = names_.names.intern(op.name);
  return classify_engine(names_, probe);
}

void online_usage::add(const op_record& op) {
  if (!is_work(op.kind)) return;
  ++ops_seen_;
  pending_.push_back({op.stream, op.kind, engine_of(op), op.ts_us, op.ts_us + op.dur_us});
  if (pending_.size() >= batch_ops_) reduce();
}

void online_usage::reduce() {
  std::sort(pending_.begin(), pending_.end(), [](const pending_op& a, const pending_op& b) { return a.begin < b.begin; });
  for (auto op : pending_) {
    // A straggler from an earlier batch: count it from the sweep point on (see the header).
    if (swept_any_ && op.begin < sweep_point_) op.begin = std::min(sweep_point_, op.end);
    sweep_point_ = op.begin;
    swept_any_ = true;
    sweep(op);
  }
  pending_.clear();
}

// In the sweep every interval reduced so far began at or before `begin`, so another set's
// coverage from `begin` on is exactly [begin, covered_until): the overlap of a fresh piece with
// it is one intersection, and each instant's overlap is counted once, by the later of the two.
double online_usage::overlap(std::pair<double, double> fresh, double begin, const coverage& other) {
  if (!other.started) return 0;
  const double from = std::max(fresh.first, begin);
  const double to = std::min(fresh.second, other.covered_until);
  return to > from ? to - from : 0;
}

void online_usage::add_engine_overlap(device_state& d, engine_class engine, std::pair<double, double> fresh,
                                      double begin) {
  switch (engine) {
    case engine_class::compute:
      d.copy_compute += overlap(fresh, begin, d.copy);
      d.compute_communication += overlap(fresh, begin, d.communication);
      return;
    case engine_class::copy:
      d.copy_compute += overlap(fresh, begin, d.compute);
      d.copy_communication += overlap(fresh, begin, d.communication);
      return;
    case engine_class::communication:
      d.compute_communication += overlap(fresh, begin, d.compute);
      d.copy_communication += overlap(fresh, begin, d.copy);
      return;
    case engine_class::none: return;
  }
}


void online_usage::sweep(const pending_op& op) {
  auto& d = devices_[op.stream.device];
  const bool first_on_device = !d.busy.started;
  d.window_begin = first_on_device ? op.begin : std::min(d.window_begin, op.begin);
  d.window_end = first_on_device ? op.end : std::max(d.window_end, op.end);
  d.spans.add(window_of(op.begin), op.begin, op.end, first_on_device);
  d.busy.extend(op.begin, op.end);

  auto& engine_coverage = op.engine == engine_class::compute ? d.compute
                          : op.engine == engine_class::copy  ? d.copy
                                                             : d.communication;
  add_engine_overlap(d, op.engine, engine_coverage.extend(op.begin, op.end), op.begin);

  auto& s = d.streams[op.stream];
  if (!s.busy.started) s.first = op.begin;
  s.last = std::max(s.last, op.end);
  s.kernels += op.kind == op_kind::kernel ? 1 : 0;
  s.memcpys += op.kind == op_kind::memcpy ? 1 : 0;
  s.memsets += op.kind == op_kind::memset ? 1 : 0;
  const auto fresh = s.busy.extend(op.begin, op.end);

  std::size_t busy_now = 1;
  for (const auto& [key, other] : d.streams) {
    if (key == op.stream) continue;
    if (other.busy.started && other.busy.covered_until > op.begin) ++busy_now;
    const double shared = overlap(fresh, op.begin, other.busy);
    if (shared > 0) d.pair_overlap[std::minmax(key, op.stream)] += shared;
  }
  d.max_concurrent = std::max(d.max_concurrent, busy_now);
}

device_usage online_usage::device_report(std::int32_t id, const device_state& d) const {
  device_usage u;
  u.device = id;
  u.window_begin_us = d.window_begin;
  u.window_end_us = d.window_end;
  u.busy_us = d.busy.total;
  u.idle_us = d.spans.total_us() - u.busy_us;  // window_us() - busy_us when not sampled
  u.compute_us = d.compute.total;
  u.copy_us = d.copy.total;
  u.communication_us = d.communication.total;
  u.copy_compute_overlap_us = d.copy_compute;
  u.compute_communication_overlap_us = d.compute_communication;
  u.copy_communication_overlap_us = d.copy_communication;
  u.streams = d.streams.size();
  u.max_concurrent_streams = d.max_concurrent;
  for (auto a = d.streams.begin(); a != d.streams.end(); ++a) {
    for (auto b = std::next(a); b != d.streams.end(); ++b) {
      const auto found = d.pair_overlap.find({a->first, b->first});
      u.stream_pairs.push_back({a->first, b->first, found == d.pair_overlap.end() ? 0.0 : found->second});
    }
  }
  return u;
}

usage_report online_usage::report(const std::map<stream_key, std::string>& names) const {
  usage_report report;
  for (const auto& [id, d] : devices_) {
    report.devices.push_back(device_report(id, d));
    for (const auto& [key, s] : d.streams) {
      stream_usage u;
      u.stream = key;
      if (const auto named = names.find(key); named != names.end()) u.name = named->second;
      u.busy_us = s.busy.total;
      u.idle_us = d.spans.total_us() - u.busy_us;
      u.kernels = s.kernels;
      u.memcpys = s.memcpys;
      u.memsets = s.memsets;
      u.first_us = s.first;
      u.last_us = s.last;
      report.streams.push_back(std::move(u));
    }
  }
  return report;
}

}  // namespace streamsafe::monitor::detail
