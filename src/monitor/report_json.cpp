// Writes the --json report. Formatting only: every figure comes from the analysis.
#include "streamsafe/monitor/report_json.hpp"

#include <algorithm>
#include <map>

#include "monitor/json_writer.hpp"
#include "monitor/text_format.hpp"
#include "streamsafe/monitor/cross_rank.hpp"

namespace streamsafe::monitor {

namespace {

using detail::json_writer;
constexpr int report_version = 1;

std::int64_t as_int(std::size_t n) { return static_cast<std::int64_t>(n); }

void write_device_figures(json_writer& w, const device_usage& d) {
  w.field("device", static_cast<std::int64_t>(d.device))
      .field("window_us", d.window_us())
      .field("busy_us", d.busy_us)
      .field("idle_us", d.idle_us)
      .field("compute_us", d.compute_us)
      .field("copy_us", d.copy_us)
      .field("communication_us", d.communication_us);
  w.key("overlap").begin_object();
  w.field("copy_compute_us", d.copy_compute_overlap_us)
      .field("compute_communication_us", d.compute_communication_overlap_us)
      .field("copy_communication_us", d.copy_communication_overlap_us);
  w.end_object();
  w.field("streams", as_int(d.streams)).field("max_concurrent_streams", as_int(d.max_concurrent_streams));
}

void write_critical_path(json_writer& w, const trace& t, const critical_path& path, double origin) {
  w.key("critical_path").begin_object();
  w.field("ops", as_int(path.ops.size()))
      .field("length_us", path.length_us)
      .field("busy_us", path.busy_us)
      .field("cross_stream_edges", as_int(path.cross_stream_edges));
  if (!path.ops.empty()) w.field("begin_us", t.ops[path.ops.front()].ts_us - origin);
  w.key("busy_by_stream").begin_array();
  for (const auto& [stream, busy] : path.busy_by_stream) {
    w.begin_object().field("stream", stream.stream).field("busy_us", busy).end_object();
  }
  w.end_array().end_object();
}

void write_devices(json_writer& w, const rank_report& r) {
  for (std::size_t i = 0; i < r.result.usage.devices.size(); ++i) {
    const device_usage& d = r.result.usage.devices[i];
    w.begin_object().field("rank", as_int(r.rank));
    write_device_figures(w, d);
    if (auto it = r.t.device_names.find(d.device); it != r.t.device_names.end()) w.field("name", it->second);
    w.key("stream_pairs").begin_array();
    for (const auto& pair : d.stream_pairs) {
      w.begin_object().field("a", pair.a.stream).field("b", pair.b.stream).field("overlap_us", pair.overlap_us).end_object();
    }
    w.end_array();
    write_critical_path(w, r.t, r.result.critical_paths[i], r.result.origin_us);
    w.end_object();
  }
}

void write_gap_totals(json_writer& w, const rank_report& r, const stream_key& stream) {
  std::map<gap_cause, std::pair<std::size_t, double>> by_cause;
  std::size_t count = 0;
  double idle = 0;
  for (const auto& gap : r.result.gaps) {
    if (gap.stream != stream) continue;
    ++count;
    idle += gap.length_us();
    auto& [n, us] = by_cause[gap.cause];
    ++n;
    us += gap.length_us();
  }
  w.key("gaps").begin_object().field("count", as_int(count)).field("idle_us", idle);
  w.key("by_cause").begin_object();
  for (gap_cause cause : {gap_cause::event_wait, gap_cause::host_sync, gap_cause::launch_bound, gap_cause::nothing_queued,
                          gap_cause::unexplained}) {
    const auto [n, us] = by_cause[cause];
    w.key(to_string(cause)).begin_object().field("count", as_int(n)).field("idle_us", us).end_object();
  }
  w.end_object().end_object();
}

void write_streams(json_writer& w, const rank_report& r) {
  for (const auto& s : r.result.usage.streams) {
    w.begin_object()
        .field("rank", as_int(r.rank))
        .field("device", static_cast<std::int64_t>(s.stream.device))
        .field("stream", s.stream.stream)
        .field("name", s.name)
        .field("busy_us", s.busy_us)
        .field("idle_us", s.idle_us)
        .field("kernels", as_int(s.kernels))
        .field("memcpys", as_int(s.memcpys))
        .field("memsets", as_int(s.memsets))
        .field("first_us", s.first_us - r.result.origin_us)
        .field("last_us", s.last_us - r.result.origin_us)
        .field("max_queue_depth", as_int(s.max_queue_depth))
        .field("mean_queue_depth", s.mean_queue_depth);
    write_gap_totals(w, r, s.stream);
    w.end_object();
  }
}

void write_iterations(json_writer& w, const rank_report& r) {
  const auto& plan = r.result.iterations;
  for (std::size_t i = 0; i < plan.iterations.size(); ++i) {
    w.begin_object()
        .field("rank", as_int(r.rank))
        .field("index", as_int(i))
        .field("begin_us", plan.iterations[i].begin_us - r.result.origin_us)
        .field("end_us", plan.iterations[i].end_us - r.result.origin_us)
        .field("ops", as_int(plan.iterations[i].ops.size()));
    w.key("devices").begin_array();
    for (const auto& d : r.result.usage_per_iteration[i].devices) {
      w.begin_object();
      write_device_figures(w, d);
      w.end_object();
    }
    w.end_array().end_object();
  }
}

void write_gaps(json_writer& w, const rank_report& r) {
  std::vector<const idle_gap*> longest;
  for (const auto& gap : r.result.gaps) longest.push_back(&gap);
  const std::size_t shown = std::min(longest.size(), json_gap_limit);
  std::partial_sort(longest.begin(), longest.begin() + static_cast<std::ptrdiff_t>(shown), longest.end(),
                    [](const idle_gap* a, const idle_gap* b) { return a->length_us() > b->length_us(); });
  for (std::size_t i = 0; i < shown; ++i) {
    const idle_gap& gap = *longest[i];
    w.begin_object()
        .field("rank", as_int(r.rank))
        .field("device", static_cast<std::int64_t>(gap.stream.device))
        .field("stream", gap.stream.stream)
        .field("begin_us", gap.begin_us - r.result.origin_us)
        .field("length_us", gap.length_us())
        .field("cause", to_string(gap.cause));
    if (gap.producer_op) w.field("producer_stream", r.t.ops[*gap.producer_op].stream.stream);
    w.field("evidence", describe(r.t, gap, r.result.origin_us)).end_object();
  }
}

void write_findings(json_writer& w, const rank_report& r) {
  for (const auto& f : r.result.findings) {
    w.begin_object()
        .field("rank", as_int(r.rank))
        .field("kind", to_string(f.kind))
        .field("occurrences", as_int(f.occurrences))
        .field("cost_us", f.cost_us)
        .field("evidence", f.evidence)
        .field("fix", f.fix)
        .end_object();
  }
}

void write_ranks(json_writer& w, const rank_report& r) {
  w.begin_object()
      .field("rank", as_int(r.rank))
      .field("source", r.t.source)
      .field("gpu_ops", as_int(r.t.ops.size()))
      .field("runtime_calls", as_int(r.t.calls.size()))
      .field("iteration_source", to_string(r.result.iterations.source))
      .field("iteration_marker", r.result.iterations.marker)
      .field("iterations", as_int(r.result.iterations.iterations.size()))
      .field("gaps", as_int(r.result.gaps.size()))
      .end_object();
}

void write_cross_rank(json_writer& w, const cross_rank_report& across) {
  w.key("cross_rank").begin_object();
  w.field("alignment", to_string(across.alignment)).field("matched_collectives", as_int(across.matched_collectives));
  w.field("equal_collective_counts", across.equal_collective_counts).field("clock_spread_us", across.clock_spread_us);
  w.key("ranks").begin_array();
  for (const rank_figures& r : across.ranks) {
    w.begin_object()
        .field("rank", as_int(r.rank))
        .field("offset_us", r.offset_us)
        .field("collectives", as_int(r.collectives))
        .field("communication_us", r.communication_us)
        .field("exposed_communication_us", r.exposed_communication_us)
        .field("clock_spread_us", r.clock_spread_us)
        .end_object();
  }
  w.end_array().key("steps").begin_array();
  for (const cross_rank_step& s : across.steps) {
    w.begin_object().field("step", as_int(s.step)).field("straggler", as_int(s.straggler));
    w.field("straggler_lead_us", s.straggler_lead_us).field("even", s.even).key("arrivals").begin_array();
    for (const step_arrival& a : s.arrivals) {
      w.begin_object().field("rank", as_int(a.rank)).field("arrival_us", a.arrival_us).end_object();
    }
    w.end_array().end_object();
  }
  w.end_array().end_object();
}

/// Writes `name: [ section(rank) for every rank ]`.
void write_section(json_writer& w, std::string_view name, std::span<const rank_report> ranks,
                   void (*section)(json_writer&, const rank_report&)) {
  w.key(name).begin_array();
  for (const auto& r : ranks) section(w, r);
  w.end_array();
}

}  // namespace

void write_report_json(std::ostream& out, std::span<const rank_report> ranks) {
  json_writer w(out);
  w.begin_object().field("version", report_version);
  write_section(w, "ranks", ranks, write_ranks);
  write_section(w, "devices", ranks, write_devices);
  write_section(w, "streams", ranks, write_streams);
  write_section(w, "iterations", ranks, write_iterations);
  write_section(w, "gaps", ranks, write_gaps);
  write_section(w, "findings", ranks, write_findings);
  if (ranks.size() > 1) write_cross_rank(w, analyze_ranks(ranks));
  w.end_object();
  out << '\n';
}

}  // namespace streamsafe::monitor
