#include "streamsafe/monitor/cross_rank.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "monitor/intervals.hpp"
#include "streamsafe/monitor/usage.hpp"

namespace streamsafe::monitor {

std::string_view to_string(clock_alignment how) {
  return how == clock_alignment::collectives ? "collectives" : "writer_clocks";
}

namespace {

bool is_collective(const trace& t, const gpu_op& op) {
  return classify_engine(t, op) == engine_class::communication;
}

/// The rank's communication kernels' ends, in the order they started.
std::vector<double> collective_ends(const trace& t) {
  std::vector<double> ends;
  for (const gpu_op& op : t.ops) {  // sorted by start once read
    if (is_collective(t, op)) ends.push_back(op.end_us());
  }
  return ends;
}

/// Microseconds from rank 0's origin to this trace's, where both writers give one.
double origin_shift_us(const trace& t, const trace& first) {
  if (!t.origin_ns || !first.origin_ns) return 0;
  return static_cast<double>(*t.origin_ns - *first.origin_ns) / 1000.0;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

void add_communication(const trace& t, rank_figures& out) {
  std::vector<detail::interval> communication;
  std::vector<detail::interval> other_work;
  for (const gpu_op& op : t.ops) {
    switch (classify_engine(t, op)) {
      case engine_class::communication: communication.push_back({op.ts_us, op.end_us()}); break;
      case engine_class::compute:
      case engine_class::copy: other_work.push_back({op.ts_us, op.end_us()}); break;
      case engine_class::none: break;
    }
  }
  out.collectives = communication.size();
  const auto comm = detail::merge_intervals(std::move(communication));
  const auto work = detail::merge_intervals(std::move(other_work));
  out.communication_us = detail::total_length(comm);
  out.exposed_communication_us = out.communication_us - detail::intersection_length(comm, work);
}

/// The start of the first collective of iteration `step`, on rank 0's time line.
std::optional<double> arrival(const rank_report& r, std::size_t step, double shift_us) {
  const auto& iterations = r.result.iterations.iterations;
  if (step >= iterations.size()) return std::nullopt;
  std::optional<double> first;
  for (const std::size_t index : iterations[step].ops) {
    const gpu_op& op = r.t.ops[index];
    if (is_collective(r.t, op) && (!first || op.ts_us < *first)) first = op.ts_us;
  }
  if (!first) return std::nullopt;
  return *first + shift_us;
}

std::vector<cross_rank_step> steps_of(std::span<const rank_report> ranks, const std::vector<double>& shifts,
                                      double spread_us) {
  std::size_t common = std::numeric_limits<std::size_t>::max();
  for (const rank_report& r : ranks) common = std::min(common, r.result.iterations.iterations.size());
  std::vector<cross_rank_step> steps;
  for (std::size_t s = 0; s < common; ++s) {
    cross_rank_step step{.step = s};
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (const auto at = arrival(ranks[i], s, shifts[i])) step.arrivals.push_back({ranks[i].rank, *at});
    }
    if (step.arrivals.size() < 2) continue;
    const auto [first, last] = std::minmax_element(step.arrivals.begin(), step.arrivals.end(),
                                                   [](const auto& a, const auto& b) { return a.arrival_us < b.arrival_us; });
    step.straggler = last->rank;
    step.straggler_lead_us = last->arrival_us - first->arrival_us;
    step.even = step.straggler_lead_us <= spread_us;
    steps.push_back(std::move(step));
  }
  return steps;
}

}  // namespace

cross_rank_report analyze_ranks(std::span<const rank_report> ranks) {
  cross_rank_report out;
  if (ranks.size() < 2) return out;
  std::vector<std::vector<double>> ends;
  std::size_t matched = std::numeric_limits<std::size_t>::max();
  for (const rank_report& r : ranks) {
    ends.push_back(collective_ends(r.t));
    matched = std::min(matched, ends.back().size());
  }
  out.matched_collectives = matched;
  out.alignment = matched > 0 ? clock_alignment::collectives : clock_alignment::writer_clocks;
  out.equal_collective_counts =
      std::all_of(ends.begin(), ends.end(), [&](const auto& e) { return e.size() == ends.front().size(); });
  std::vector<double> shifts;  // per rank: origin shift plus offset, onto rank 0's time line
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const double shift = origin_shift_us(ranks[i].t, ranks[0].t);
    std::vector<double> differences;
    for (std::size_t k = 0; k < matched; ++k) differences.push_back(ends[0][k] - (ends[i][k] + shift));
    rank_figures figures{.rank = ranks[i].rank, .offset_us = median(differences)};
    for (const double d : differences) figures.clock_spread_us = std::max(figures.clock_spread_us, std::abs(d - figures.offset_us));
    out.clock_spread_us = std::max(out.clock_spread_us, figures.clock_spread_us);
    add_communication(ranks[i].t, figures);
    out.ranks.push_back(figures);
    shifts.push_back(shift + figures.offset_us);
  }
  if (out.alignment == clock_alignment::collectives) out.steps = steps_of(ranks, shifts, out.clock_spread_us);
  return out;
}

}  // namespace streamsafe::monitor
