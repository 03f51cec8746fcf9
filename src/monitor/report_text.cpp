#include "streamsafe/monitor/report_text.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "monitor/text_format.hpp"
#include "streamsafe/monitor/cross_rank.hpp"

namespace streamsafe::monitor {

namespace {

using detail::format_duration;

std::string share(double part, double whole) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%5.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buffer;
}

void write_devices(std::ostream& out, const rank_report& r) {
  for (std::size_t i = 0; i < r.result.usage.devices.size(); ++i) {
    const auto& d = r.result.usage.devices[i];
    out << "device " << d.device << ": window " << format_duration(d.window_us()) << ", busy " << format_duration(d.busy_us)
        << " (" << share(d.busy_us, d.window_us()) << "), idle " << format_duration(d.idle_us) << "\n  compute "
        << format_duration(d.compute_us) << ", copy " << format_duration(d.copy_us) << ", communication "
        << format_duration(d.communication_us) << "; copy||compute " << format_duration(d.copy_compute_overlap_us)
        << ", compute||comm " << format_duration(d.compute_communication_overlap_us) << "\n  " << d.streams
        << " streams with work, at most " << d.max_concurrent_streams << " busy at once\n";
    const auto& path = r.result.critical_paths[i];
    out << "  critical path: " << path.ops.size() << " ops over " << format_duration(path.length_us) << ", busy "
        << format_duration(path.busy_us) << " (" << share(path.busy_us, path.length_us) << "), "
        << path.cross_stream_edges << " cross-stream waits\n";
  }
}

void write_streams(std::ostream& out, const rank_report& r) {
  std::map<stream_key, std::map<gap_cause, double>> idle_by_cause;
  for (const auto& gap : r.result.gaps) idle_by_cause[gap.stream][gap.cause] += gap.length_us();
  out << "  stream          busy      idle  kernels memcpys memsets  queue  idle by cause\n";
  for (const auto& s : r.result.usage.streams) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-3d/%-8lld %9s %9s %8zu %7zu %7zu %6zu  ", s.stream.device,
                  static_cast<long long>(s.stream.stream), format_duration(s.busy_us).c_str(),
                  format_duration(s.idle_us).c_str(), s.kernels, s.memcpys, s.memsets, s.max_queue_depth);
    out << line;
    for (const auto& [cause, us] : idle_by_cause[s.stream]) out << to_string(cause) << ' ' << format_duration(us) << "  ";
    out << '\n';
  }
}

void write_gaps(std::ostream& out, const rank_report& r, std::size_t limit) {
  std::vector<const idle_gap*> longest;
  for (const auto& gap : r.result.gaps) longest.push_back(&gap);
  std::sort(longest.begin(), longest.end(), [](const idle_gap* a, const idle_gap* b) { return a->length_us() > b->length_us(); });
  if (longest.empty()) return;
  out << "longest idle gaps:\n";
  for (std::size_t i = 0; i < std::min(limit, longest.size()); ++i) {
    out << "  [" << to_string(longest[i]->cause) << "] " << describe(r.t, *longest[i], r.result.origin_us) << '\n';
  }
}

void write_findings(std::ostream& out, const rank_report& r) {
  if (r.result.findings.empty()) {
    out << "no misuse found\n";
    return;
  }
  out << "findings:\n";
  for (const auto& f : r.result.findings) {
    out << "  * " << to_string(f.kind) << ": " << f.evidence << "\n    fix: " << f.fix << '\n';
  }
}

}  // namespace

void write_cross_rank(std::ostream& out, const cross_rank_report& across) {
  out << "== across " << across.ranks.size() << " ranks: clocks aligned on ";
  if (across.alignment == clock_alignment::collectives) {
    out << across.matched_collectives << " collectives (each rank's k-th communication kernel ends together), within "
        << format_duration(across.clock_spread_us) << "\n";
  } else {
    out << "the writers' clocks alone (a rank has no communication kernel): no straggler is named\n";
  }
  if (!across.equal_collective_counts) {
    out << "  warning: the ranks ran different numbers of communication kernels; the first " << across.matched_collectives
        << " of each are paired, so check that every trace covers the same steps\n";
  }
  char offset[32];
  for (const rank_figures& r : across.ranks) {
    std::snprintf(offset, sizeof offset, "%+.3f us", r.offset_us);
    out << "  rank " << r.rank << ": clock " << offset << ", " << r.collectives << " communication kernels, "
        << format_duration(r.communication_us) << "; exposed (no compute or copy beside it) "
        << format_duration(r.exposed_communication_us) << " (" << share(r.exposed_communication_us, r.communication_us)
        << ")\n";
  }
  if (across.steps.empty()) return;
  std::map<std::size_t, std::size_t> straggled;
  for (const cross_rank_step& s : across.steps) {
    if (!s.even) ++straggled[s.straggler];
  }
  out << "  straggler per step (the rank whose first collective started last, and how long the first waited):";
  constexpr std::size_t steps_shown = 10;
  for (std::size_t i = 0; i < std::min(steps_shown, across.steps.size()); ++i) {
    const cross_rank_step& s = across.steps[i];
    out << (i == 0 ? " " : ", ") << "step " << s.step;
    if (!s.even) {
      out << " rank " << s.straggler << " (" << format_duration(s.straggler_lead_us) << ")";
    } else {
      out << " even";
    }
  }
  if (across.steps.size() > steps_shown) out << ", ...";
  out << "\n ";
  for (const auto& [rank, count] : straggled) out << " rank " << rank << " straggled in " << count << " of " << across.steps.size() << " steps;";
  if (straggled.empty()) out << " every step even";
  out << "\n";
}

void write_report_text(std::ostream& out, std::span<const rank_report> ranks) {
  constexpr std::size_t gaps_shown = 5;
  for (const auto& r : ranks) {
    const auto& plan = r.result.iterations;
    out << "== rank " << r.rank << ": " << r.t.source << " (" << r.t.ops.size() << " GPU ops, " << r.t.calls.size()
        << " runtime calls, " << plan.iterations.size() << " iterations";
    if (plan.source != iteration_source::none) out << " by " << to_string(plan.source) << " '" << plan.marker << "'";
    out << ")\n";
    write_devices(out, r);
    write_streams(out, r);
    write_gaps(out, r, gaps_shown);
    write_findings(out, r);
  }
  if (ranks.size() > 1) write_cross_rank(out, analyze_ranks(ranks));
}

}  // namespace streamsafe::monitor
