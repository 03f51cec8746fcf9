// Classifies each idle gap of each stream; see idle_gaps.hpp for the rules and their order.
#include "streamsafe/monitor/idle_gaps.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>

#include "monitor/intervals.hpp"
#include "monitor/trace_index.hpp"
#include "streamsafe/monitor/usage.hpp"

namespace streamsafe::monitor {

std::string_view to_string(gap_cause cause) {
  switch (cause) {
    case gap_cause::event_wait: return "event_wait";
    case gap_cause::host_sync: return "host_sync";
    case gap_cause::launch_bound: return "launch_bound";
    case gap_cause::nothing_queued: return "nothing_queued";
    case gap_cause::unexplained: return "unexplained";
  }
  return "?";
}

namespace {

bool is_host_sync(call_kind kind) {
  return kind == call_kind::device_sync || kind == call_kind::stream_sync || kind == call_kind::event_sync;
}

class gap_classifier {
 public:
  gap_classifier(const trace& t, const gap_options& options) : t_(t), index_(t), options_(options) {
    for (const auto& call : t.calls) longest_call_us_ = std::max(longest_call_us_, call.dur_us);
    for (std::size_t d = 0; d < t.dependencies.size(); ++d) waits_on_stream_[t.ops[t.dependencies[d].wait_op].stream].push_back(d);
  }

  std::vector<idle_gap> run() {
    std::vector<idle_gap> gaps;
    for (const auto& [stream, ops] : index_.work_by_stream()) {
      double drained = -std::numeric_limits<double>::infinity();
      std::size_t last = ops.empty() ? 0 : ops.front();
      for (std::size_t i : ops) {
        // Ops on one stream can overlap in a trace (clock skew); the stream drains at the latest end.
        if (i != ops.front() && t_.ops[i].ts_us - drained >= options_.min_gap_us) gaps.push_back(classify(last, i, drained));
        if (t_.ops[i].end_us() >= drained) {
          drained = t_.ops[i].end_us();
          last = i;
        }
      }
    }
    return gaps;
  }

 private:
  idle_gap classify(std::size_t before, std::size_t after, double drained) {
    idle_gap gap;
    gap.stream = t_.ops[after].stream;
    gap.begin_us = drained;
    gap.end_us = t_.ops[after].ts_us;
    gap.before_op = before;
    gap.after_op = after;
    if (declared_wait(gap)) return gap;
    const runtime_call* launch = index_.launch_of(t_.ops[after]);
    if (launch != nullptr) gap.host_call = static_cast<std::size_t>(launch - t_.calls.data());
    // The host is to blame only when the op ran as soon as it was launched; an op that still
    // waited after its launch was held by something else.
    if (launch != nullptr && launch->end_us() > gap.begin_us &&
        gap.end_us - launch->end_us() <= options_.release_tolerance_us) {
      classify_late_launch(gap, *launch);
    } else {
      classify_queued(gap, launch);
    }
    return gap;
  }

  /// A dependency whose wait slice sits between the two ops, and whose producer ended in the gap.
  bool declared_wait(idle_gap& gap) const {
    auto it = waits_on_stream_.find(gap.stream);
    if (it == waits_on_stream_.end()) return false;
    for (std::size_t d : it->second) {
      const gpu_op& wait = t_.ops[t_.dependencies[d].wait_op];
      if (wait.ts_us < t_.ops[gap.before_op].ts_us || wait.ts_us > gap.end_us) continue;
      const auto producer = op_before_record(t_.dependencies[d].record_op);
      if (!producer || t_.ops[*producer].end_us() < gap.begin_us) continue;
      gap.cause = gap_cause::event_wait;
      gap.wait = wait_evidence::declared;
      gap.producer_op = producer;
      return true;
    }
    return false;
  }

  /// The last work op on the record's stream that started before the record: what it waits for.
  std::optional<std::size_t> op_before_record(std::size_t record_op) const {
    const gpu_op& record = t_.ops[record_op];
    auto it = index_.work_by_stream().find(record.stream);
    if (it == index_.work_by_stream().end()) return std::nullopt;
    const auto& ops = it->second;
    auto pos = std::upper_bound(ops.begin(), ops.end(), record.ts_us,
                                [&](double ts, std::size_t op) { return ts < t_.ops[op].ts_us; });
    if (pos == ops.begin()) return std::nullopt;
    return *std::prev(pos);
  }

  void classify_late_launch(idle_gap& gap, const runtime_call& launch) {
    if (auto sync = sync_during(launch.thread, gap.begin_us, launch.ts_us)) {
      gap.cause = gap_cause::host_sync;
      gap.host_call = sync;
      return;
    }
    const double window = launch.end_us() - gap.begin_us;
    gap.host_api_fraction = window > 0 ? api_time(launch.thread, gap.begin_us, launch.end_us()) / window : 1.0;
    gap.cause = gap.host_api_fraction >= 0.5 ? gap_cause::launch_bound : gap_cause::nothing_queued;
  }

  void classify_queued(idle_gap& gap, const runtime_call* launch) {
    gap.producer_op = releasing_op(gap);
    gap.cause = gap_cause::unexplained;
    if (gap.producer_op && launch != nullptr && wait_call_before(*launch)) {
      gap.cause = gap_cause::event_wait;
      gap.wait = wait_evidence::inferred;
    }
  }

  /// The latest-ending work op on another stream of the device that ended in the gap, shortly
  /// before the next op started.
  std::optional<std::size_t> releasing_op(const idle_gap& gap) const {
    std::optional<std::size_t> best;
    for (const auto& [stream, ops] : index_.work_by_stream()) {
      if (stream == gap.stream || stream.device != gap.stream.device) continue;
      // Ops on a stream end in start order, so the last one starting before the gap end decides.
      auto pos = std::lower_bound(ops.begin(), ops.end(), gap.end_us,
                                  [&](std::size_t op, double ts) { return t_.ops[op].ts_us < ts; });
      if (pos == ops.begin()) continue;
      const std::size_t candidate = *std::prev(pos);
      const double end = t_.ops[candidate].end_us();
      if (end < gap.begin_us || end > gap.end_us || gap.end_us - end > options_.release_tolerance_us) continue;
      if (!best || end > t_.ops[*best].end_us()) best = candidate;
    }
    return best;
  }

  /// Whether the launching thread called cudaStreamWaitEvent shortly before the launch (since the
  /// previous launch-like call on that thread).
  bool wait_call_before(const runtime_call& launch) const {
    auto end = std::lower_bound(t_.calls.begin(), t_.calls.end(), launch.ts_us,
                                [](const runtime_call& c, double ts) { return c.ts_us < ts; });
    for (auto it = std::make_reverse_iterator(end); it != t_.calls.rend(); ++it) {
      if (it->thread != launch.thread) continue;
      if (it->kind == call_kind::stream_wait_event) return true;
      if (it->kind == call_kind::launch || it->kind == call_kind::memcpy || it->kind == call_kind::memset) return false;
    }
    return false;
  }

  /// The blocking call on `thread` that covers most of [begin, end]: a host synchronisation, or a
  /// copy call that blocked for at least a tenth of the window (a pageable copy is synchronous).
  std::optional<std::size_t> sync_during(std::int64_t thread, double begin, double end) const {
    std::optional<std::size_t> best;
    double best_overlap = 0;
    for (std::size_t i = first_call_overlapping(begin); i < t_.calls.size() && t_.calls[i].ts_us <= end; ++i) {
      const runtime_call& c = t_.calls[i];
      if (c.thread != thread || c.end_us() < begin) continue;
      const double overlap = std::min(c.end_us(), end) - std::max(c.ts_us, begin);
      const bool blocking = is_host_sync(c.kind) || (c.kind == call_kind::memcpy && overlap >= 0.1 * (end - begin));
      if (blocking && (!best || overlap > best_overlap)) {
        best = i;
        best_overlap = overlap;
      }
    }
    return best;
  }

  /// Time `thread` spent in CUDA API calls within [begin, end].
  double api_time(std::int64_t thread, double begin, double end) const {
    std::vector<detail::interval> busy;
    for (std::size_t i = first_call_overlapping(begin); i < t_.calls.size() && t_.calls[i].ts_us <= end; ++i) {
      const runtime_call& c = t_.calls[i];
      if (c.thread == thread) busy.push_back({std::max(c.ts_us, begin), std::min(c.end_us(), end)});
    }
    return detail::total_length(detail::merge_intervals(std::move(busy)));
  }

  std::size_t first_call_overlapping(double begin) const {
    // A call that overlaps `begin` started at most longest_call_us_ before it.
    auto it = std::lower_bound(t_.calls.begin(), t_.calls.end(), begin - longest_call_us_,
                               [](const runtime_call& c, double ts) { return c.ts_us < ts; });
    return static_cast<std::size_t>(it - t_.calls.begin());
  }

  const trace& t_;
  detail::trace_index index_;
  gap_options options_;
  double longest_call_us_ = 0;
  std::map<stream_key, std::vector<std::size_t>> waits_on_stream_;  // dependency indices
};

}  // namespace

std::vector<idle_gap> find_idle_gaps(const trace& t, const gap_options& options) {
  return gap_classifier(t, options).run();
}

}  // namespace streamsafe::monitor
