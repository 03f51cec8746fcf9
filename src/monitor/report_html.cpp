#include "streamsafe/monitor/report_html.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "monitor/intervals.hpp"
#include "monitor/text_format.hpp"

namespace streamsafe::monitor {

namespace {

using detail::format_duration;
using detail::interval;

constexpr double timeline_width_px = 1000;
constexpr double row_height_px = 22;
constexpr double label_width_px = 170;

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;  // a char, not one of our enums
    }
  }
  return out;
}

std::string_view colour_of(engine_class engine) {
  switch (engine) {
    case engine_class::compute: return "#4878d0";
    case engine_class::copy: return "#ee854a";
    case engine_class::communication: return "#6acc64";
    case engine_class::none: return "#999999";
  }
  return "#999999";
}

std::string_view colour_of(gap_cause cause) {
  switch (cause) {
    case gap_cause::event_wait: return "#d65f5f";
    case gap_cause::host_sync: return "#956cb4";
    case gap_cause::launch_bound: return "#dc7ec0";
    case gap_cause::nothing_queued: return "#bbbbbb";
    case gap_cause::unexplained: return "#8c613c";
  }
  return "#000000";
}

/// Intervals closer than half a pixel are drawn as one rectangle, so the picture stays small
/// whatever the trace size.
std::vector<interval> pixel_merge(std::vector<interval> pieces, double us_per_px) {
  auto merged = detail::merge_intervals(std::move(pieces));
  std::vector<interval> out;
  for (const auto& i : merged) {
    if (!out.empty() && i.begin - out.back().end < 0.5 * us_per_px) {
      out.back().end = i.end;
    } else {
      out.push_back(i);
    }
  }
  return out;
}

void rect(std::ostream& out, double x, double y, double w, double h, std::string_view colour, const std::string& title) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\">", x, y,
                std::max(w, 0.5), h, std::string(colour).c_str());
  out << buffer << "<title>" << escape(title) << "</title></rect>\n";
}

void write_timeline(std::ostream& out, const rank_report& r) {
  const auto& streams = r.result.usage.streams;
  if (streams.empty()) return;
  double begin = streams.front().first_us, end = streams.front().last_us;
  for (const auto& s : streams) begin = std::min(begin, s.first_us), end = std::max(end, s.last_us);
  const double us_per_px = std::max(end - begin, 1e-9) / timeline_width_px;
  const auto x_of = [&](double us) { return label_width_px + (us - begin) / us_per_px; };
  std::map<stream_key, std::size_t> row_of;
  for (const auto& s : streams) row_of.emplace(s.stream, row_of.size());
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << label_width_px + timeline_width_px + 10 << "\" height=\""
      << (static_cast<double>(streams.size()) + 1) * row_height_px << "\" font-family=\"monospace\" font-size=\"11\">\n";
  std::map<std::pair<std::size_t, engine_class>, std::vector<interval>> pieces;
  for (const auto& op : r.t.ops) {
    auto row = row_of.find(op.stream);
    const engine_class engine = classify_engine(r.t, op);
    if (row != row_of.end() && engine != engine_class::none) pieces[{row->second, engine}].push_back({op.ts_us, op.end_us()});
  }
  for (auto& [key, list] : pieces) {
    const double y = static_cast<double>(key.first) * row_height_px + 2;
    for (const auto& i : pixel_merge(std::move(list), us_per_px)) {
      rect(out, x_of(i.begin), y, (i.end - i.begin) / us_per_px, row_height_px - 8, colour_of(key.second),
           format_duration(i.end - i.begin) + " busy");
    }
  }
  for (const auto& gap : r.result.gaps) {
    if (gap.length_us() < us_per_px) continue;  // invisible at this scale
    const double y = static_cast<double>(row_of[gap.stream]) * row_height_px + row_height_px - 6;
    rect(out, x_of(gap.begin_us), y, gap.length_us() / us_per_px, 3, colour_of(gap.cause),
         std::string(to_string(gap.cause)) + ": " + describe(r.t, gap, r.result.origin_us));
  }
  for (const auto& s : streams) {
    out << "<text x=\"2\" y=\"" << static_cast<double>(row_of[s.stream]) * row_height_px + 14 << "\">"
        << escape(detail::shorten(detail::format_stream(r.t, s.stream), 26)) << "</text>\n";
  }
  out << "<text x=\"" << label_width_px << "\" y=\"" << (static_cast<double>(streams.size()) + 0.7) * row_height_px
      << "\">0 .. " << escape(format_duration(end - begin)) << " (from " << escape(detail::format_time(begin, r.result.origin_us))
      << ")</text>\n</svg>\n";
}

void write_legend(std::ostream& out) {
  out << "<p class=\"legend\">";
  for (engine_class e : {engine_class::compute, engine_class::copy, engine_class::communication}) {
    out << "<span style=\"background:" << colour_of(e) << "\">&nbsp;&nbsp;</span> "
        << (e == engine_class::compute ? "compute" : e == engine_class::copy ? "copy" : "communication") << " &nbsp; ";
  }
  for (gap_cause c : {gap_cause::event_wait, gap_cause::host_sync, gap_cause::launch_bound, gap_cause::nothing_queued,
                      gap_cause::unexplained}) {
    out << "<span style=\"background:" << colour_of(c) << "\">&nbsp;&nbsp;</span> idle: " << to_string(c) << " &nbsp; ";
  }
  out << "</p>\n";
}

void write_tables(std::ostream& out, const rank_report& r) {
  out << "<table><tr><th>device</th><th>window</th><th>busy</th><th>idle</th><th>compute</th><th>copy</th>"
         "<th>copy&#8741;compute</th><th>streams</th><th>max concurrent</th><th>critical path busy / length</th></tr>\n";
  for (std::size_t i = 0; i < r.result.usage.devices.size(); ++i) {
    const auto& d = r.result.usage.devices[i];
    const auto& p = r.result.critical_paths[i];
    out << "<tr><td>" << d.device << "</td><td>" << format_duration(d.window_us()) << "</td><td>" << format_duration(d.busy_us)
        << "</td><td>" << format_duration(d.idle_us) << "</td><td>" << format_duration(d.compute_us) << "</td><td>"
        << format_duration(d.copy_us) << "</td><td>" << format_duration(d.copy_compute_overlap_us) << "</td><td>" << d.streams
        << "</td><td>" << d.max_concurrent_streams << "</td><td>" << format_duration(p.busy_us) << " / "
        << format_duration(p.length_us) << "</td></tr>\n";
  }
  out << "</table>\n<table><tr><th>stream</th><th>busy</th><th>idle</th><th>kernels</th><th>memcpys</th><th>memsets</th>"
         "<th>max queue</th></tr>\n";
  for (const auto& s : r.result.usage.streams) {
    out << "<tr><td>" << escape(detail::format_stream(r.t, s.stream)) << "</td><td>" << format_duration(s.busy_us) << "</td><td>"
        << format_duration(s.idle_us) << "</td><td>" << s.kernels << "</td><td>" << s.memcpys << "</td><td>" << s.memsets
        << "</td><td>" << s.max_queue_depth << "</td></tr>\n";
  }
  out << "</table>\n<h3>Findings</h3>\n<table><tr><th>finding</th><th>evidence</th><th>fix</th></tr>\n";
  for (const auto& f : r.result.findings) {
    out << "<tr><td>" << to_string(f.kind) << "</td><td>" << escape(f.evidence) << "</td><td>" << escape(f.fix) << "</td></tr>\n";
  }
  out << "</table>\n";
}

void write_longest_gaps(std::ostream& out, const rank_report& r) {
  constexpr std::size_t shown = 20;
  std::vector<const idle_gap*> longest;
  for (const auto& gap : r.result.gaps) longest.push_back(&gap);
  std::sort(longest.begin(), longest.end(), [](const idle_gap* a, const idle_gap* b) { return a->length_us() > b->length_us(); });
  out << "<h3>Longest idle gaps</h3>\n<table><tr><th>cause</th><th>evidence</th></tr>\n";
  for (std::size_t i = 0; i < std::min(shown, longest.size()); ++i) {
    out << "<tr><td>" << to_string(longest[i]->cause) << "</td><td>" << escape(describe(r.t, *longest[i], r.result.origin_us))
        << "</td></tr>\n";
  }
  out << "</table>\n";
}

}  // namespace

void write_report_html(std::ostream& out, std::span<const rank_report> ranks) {
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>streamsafe report</title><style>"
         "body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin:.5em 0}"
         "td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px;text-align:left}"
         ".legend span{display:inline-block;width:1em}</style></head><body>\n<h1>streamsafe report</h1>\n";
  write_legend(out);
  for (const auto& r : ranks) {
    out << "<h2>rank " << r.rank << ": " << escape(r.t.source) << "</h2>\n";
    write_timeline(out, r);
    write_tables(out, r);
    write_longest_gaps(out, r);
  }
  out << "</body></html>\n";
}

}  // namespace streamsafe::monitor
