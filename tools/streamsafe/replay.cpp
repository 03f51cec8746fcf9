// streamsafe replay TRACE [--backend sim|cuda] [--json] [--free-point requested|completed] [--conf TEXT]:
// replays an allocation trace (GUIDE.md section 5) through the caching allocator and prints
// peak live bytes, peak reserved bytes, their ratio, device allocations and ns per op.
// Exit 0: replayed; 2: bad input (a malformed line names its line number).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "progress_line.hpp"
#include "streamsafe/alloc/allocator_options.hpp"
#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe::cli {

namespace {

const std::vector<option_spec> replay_options_spec = {
    {"backend", true, "sim (default: no GPU needed) or cuda"},
    {"json", false, "print one JSON object instead of text"},
    {"free-point", true,
     "requested (default: frees happen when the program asked, our allocator applies its own stream "
     "rules) or completed (when PyTorch made the memory reusable)"},
    {"conf", true, "allocator options as in STREAMSAFE_ALLOC_CONF (default: that variable)"},
    {"help", false, "print this help"},
};

std::string_view free_point_name(replay_free_point point) {
  switch (point) {
    case replay_free_point::requested: return "free_requested";
    case replay_free_point::completed: return "free_completed";
  }
  return "?";
}

/// sim memory for the replay: twice the trace's peak live bytes (plus slack), capped so the
/// host can reserve it.
Device replay_device(const std::string& backend, const std::vector<trace_event>& events) {
  if (backend == "cuda") return Device::cuda(0);
  if (backend != "sim") throw usage_error("streamsafe replay: --backend must be sim or cuda, not '" + backend + "'");
  std::uint64_t live = 0;
  std::uint64_t peak = 0;
  for (const trace_event& e : events) {
    if (e.action == trace_action::alloc) peak = std::max(peak, live += e.size);
    if (e.action == trace_action::free_requested) live -= std::min(live, e.size);
  }
  return Device::sim(sim_options{.memory_capacity = peak * 2 + (std::size_t{1} << 30)});
}

/// The segment policy in STREAMSAFE_ALLOC_CONF's words, so a table of runs says which was which.
std::string policy_of(const allocator_options& options) {
  if (options.segments == segment_kind::fixed) return "fixed";
  switch (options.growth) {
    case expandable_growth::stitch: return "expandable, stitch";
    case expandable_growth::remap: return "expandable, remap";
    case expandable_growth::map_new: return "expandable, map_new";
  }
  return "expandable";
}

// Progress is worth showing only to a person watching a long replay (a few seconds and more).
constexpr std::size_t progress_min_events = std::size_t{1} << 20;

replay_progress progress_printer(std::size_t events) {
  if (events < progress_min_events) return {};
  auto line = progress_line("replay", events, std::to_string(events) + " events");
  if (!line) return {};
  return [line = std::move(line)](std::size_t done, std::size_t) { line(done); };
}

double ratio(std::uint64_t reserved, std::uint64_t live) {
  return live == 0 ? 0.0 : static_cast<double>(reserved) / static_cast<double>(live);
}

void print_json(const replay_result& r, const Device& device, const std::string& policy) {
  std::printf(
      "{\"device\":\"%s\",\"policy\":\"%s\",\"operations\":%llu,\"streams\":%zu,\"free_point\":\"%s\",\"peak_live_bytes\":%llu,"
      "\"peak_reserved_bytes\":%llu,\"reserved_over_live\":%.4f,\"original_peak_reserved_bytes\":%llu,"
      "\"original_reserved_over_live\":%.4f,\"device_allocations\":%llu,\"unmatched_frees\":%llu,\"ns_per_op\":%.1f}\n",
      device.name().c_str(), policy.c_str(), static_cast<unsigned long long>(r.operations), r.streams,
      std::string(free_point_name(r.free_point)).c_str(), static_cast<unsigned long long>(r.peak_live_bytes),
      static_cast<unsigned long long>(r.peak_reserved_bytes), ratio(r.peak_reserved_bytes, r.peak_live_bytes),
      static_cast<unsigned long long>(r.original_peak_reserved_bytes),
      ratio(r.original_peak_reserved_bytes, r.peak_live_bytes), static_cast<unsigned long long>(r.device_allocations),
      static_cast<unsigned long long>(r.unmatched_frees), r.ns_per_op);
}

void print_text(const std::string& path, const replay_result& r, const Device& device, const std::string& policy) {
  constexpr double mib = 1 << 20;
  std::printf("%s: %llu operations on %zu stream(s), replayed on %s\n", path.c_str(),
              static_cast<unsigned long long>(r.operations), r.streams, device.name().c_str());
  std::printf("segments: %s\n", policy.c_str());
  std::printf("frees replayed at %s%s\n", std::string(free_point_name(r.free_point)).c_str(),
              r.free_point == replay_free_point::requested
                  ? " (when the program freed; streamsafe applies its own stream-ordering rules)"
                  : " (when PyTorch made the memory reusable)");
  std::printf("peak live:     %12.1f MiB\n", static_cast<double>(r.peak_live_bytes) / mib);
  std::printf("peak reserved: %12.1f MiB   reserved/live %.4f\n", static_cast<double>(r.peak_reserved_bytes) / mib,
              ratio(r.peak_reserved_bytes, r.peak_live_bytes));
  if (r.original_peak_reserved_bytes != 0) {
    std::printf("original (from the trace's segment events): %.1f MiB reserved, reserved/live %.4f\n",
                static_cast<double>(r.original_peak_reserved_bytes) / mib,
                ratio(r.original_peak_reserved_bytes, r.peak_live_bytes));
  }
  std::printf("device allocations: %llu\nhost time: %.1f ns per op\n",
              static_cast<unsigned long long>(r.device_allocations), r.ns_per_op);
  if (r.unmatched_frees != 0) {
    std::printf("skipped %llu frees of addresses allocated before the trace began\n",
                static_cast<unsigned long long>(r.unmatched_frees));
  }
}

}  // namespace

int run_replay(const std::vector<std::string>& argv) {
  const args parsed("replay", argv, replay_options_spec);
  if (parsed.has("help")) {
    std::cout << usage("replay", "TRACE [--backend sim|cuda] [--json] [--free-point requested|completed] [--conf TEXT]",
                       replay_options_spec);
    return 0;
  }
  if (parsed.positionals().size() != 1) {
    std::cerr << "streamsafe replay: expected one TRACE file (see streamsafe replay --help)\n";
    return 2;
  }
  const std::string& path = parsed.positionals().front();
  const std::string free_point = parsed.value_or("free-point", "requested");
  if (free_point != "requested" && free_point != "completed") {
    throw usage_error("streamsafe replay: --free-point must be requested or completed, not '" + free_point + "'");
  }
  const allocator_options options =
      parsed.has("conf") ? parse_alloc_conf(*parsed.value("conf")) : alloc_options_from_env();
  const std::vector<trace_event> events = load_alloc_trace(path);
  const Device device = replay_device(parsed.value_or("backend", "sim"), events);
  const replay_progress progress = progress_printer(events.size());
  const replay_result result =
      replay_alloc_trace(events, device, options,
                         free_point == "requested" ? replay_free_point::requested : replay_free_point::completed,
                         progress);
  if (progress) std::cerr << '\n';
  if (parsed.has("json")) {
    print_json(result, device, policy_of(options));
  } else {
    print_text(path, result, device, policy_of(options));
  }
  return 0;
}

}  // namespace streamsafe::cli
