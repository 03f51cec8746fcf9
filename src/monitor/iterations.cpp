#include "streamsafe/monitor/iterations.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

namespace streamsafe::monitor {

std::string_view to_string(iteration_source source) {
  switch (source) {
    case iteration_source::user_marker: return "user_marker";
    case iteration_source::profiler_step: return "profiler_step";
    case iteration_source::inferred: return "inferred";
    case iteration_source::none: return "none";
  }
  return "?";
}

namespace {

constexpr std::string_view profiler_step_prefix = "ProfilerStep#";

enum class name_match : std::uint8_t { exact, prefix };

std::vector<double> marker_starts(const trace& t, std::string_view name, name_match match) {
  std::vector<double> starts;
  for (const auto& range : t.annotations) {
    if (range.side != annotation_side::host) continue;
    const auto text = t.name_of(range);
    if (match == name_match::prefix ? text.starts_with(name) : text == name) starts.push_back(range.ts_us);
  }
  std::sort(starts.begin(), starts.end());
  return starts;
}

/// The host annotation name that repeats most often; ties go to the one seen first.
std::string most_repeated_annotation(const trace& t) {
  std::map<name_id, std::pair<std::size_t, double>> seen;  // count, first start
  for (const auto& range : t.annotations) {
    if (range.side != annotation_side::host) continue;
    auto [it, inserted] = seen.try_emplace(range.name, 0, range.ts_us);
    ++it->second.first;
  }
  name_id best = 0;
  std::size_t best_count = 1;  // at least two repeats needed
  double best_start = std::numeric_limits<double>::infinity();
  for (const auto& [name, stats] : seen) {
    const auto [count, start] = stats;
    if (count > best_count || (count == best_count && count > 1 && start < best_start)) {
      best = name;
      best_count = count;
      best_start = start;
    }
  }
  return best_count > 1 ? std::string(t.names.view(best)) : std::string();
}

/// The iteration whose [begin, next begin) holds `time`; -1 before the first.
long iteration_at(const std::vector<double>& starts, double time) {
  const auto it = std::upper_bound(starts.begin(), starts.end(), time);
  return static_cast<long>(it - starts.begin()) - 1;
}

void assign(const trace& t, const std::vector<double>& starts, iteration_plan& plan) {
  const double end_of_trace = [&] {
    double end = starts.back();
    for (const auto& op : t.ops) end = std::max(end, op.end_us());
    for (const auto& call : t.calls) end = std::max(end, call.end_us());
    return end;
  }();
  for (std::size_t i = 0; i < starts.size(); ++i) {
    plan.iterations.push_back({starts[i], i + 1 < starts.size() ? starts[i + 1] : end_of_trace, {}, {}});
  }
  std::unordered_map<std::int64_t, double> launch_time;
  for (std::size_t i = 0; i < t.calls.size(); ++i) {
    if (t.calls[i].correlation >= 0) launch_time.emplace(t.calls[i].correlation, t.calls[i].ts_us);
    const long at = iteration_at(starts, t.calls[i].ts_us);
    if (at >= 0) plan.iterations[static_cast<std::size_t>(at)].calls.push_back(i);
  }
  for (std::size_t i = 0; i < t.ops.size(); ++i) {
    const auto launched = launch_time.find(t.ops[i].correlation);
    const double time = launched != launch_time.end() ? launched->second : t.ops[i].ts_us;
    const long at = iteration_at(starts, time);
    if (at >= 0) plan.iterations[static_cast<std::size_t>(at)].ops.push_back(i);
  }
}

}  // namespace

iteration_plan find_iterations(const trace& t, std::string_view marker) {
  iteration_plan plan;
  std::vector<double> starts;
  if (!marker.empty()) {
    plan = {iteration_source::user_marker, std::string(marker), {}};
    starts = marker_starts(t, marker, name_match::exact);
  } else if (starts = marker_starts(t, profiler_step_prefix, name_match::prefix); !starts.empty()) {
    plan = {iteration_source::profiler_step, std::string(profiler_step_prefix), {}};
  } else if (auto inferred = most_repeated_annotation(t); !inferred.empty()) {
    starts = marker_starts(t, inferred, name_match::exact);
    plan = {iteration_source::inferred, std::move(inferred), {}};
  }
  if (starts.empty()) {
    plan.source = iteration_source::none;
    return plan;
  }
  assign(t, starts, plan);
  return plan;
}

}  // namespace streamsafe::monitor
