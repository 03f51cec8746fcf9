// streamsafe replay TRACE [--backend sim|cuda] [--json] [--free-point requested|completed] [--conf TEXT]
//                         [--iterations N] [--busy] [--busy-us US] [--busy-every K] [--headroom F]:
// replays an allocation trace (GUIDE.md section 5) through the caching allocator, once or as a
// training loop, and prints peak live bytes, peak reserved bytes, their ratio, device calls,
// host synchronizations and ns per op, for the first iteration and the steady state.
// Exit 0: replayed; 2: bad input (a malformed line names its line number).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "busy_device.hpp"
#include "commands.hpp"
#include "progress_line.hpp"
#include "replay_device.hpp"
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
    {"iterations", true,
     "passes over the trace as a training loop (default 1); later passes repeat the allocations the trace "
     "frees, those it keeps stay from the first"},
    {"busy", false,
     "keep the device busy: a kernel of --busy-us every --busy-every operations, and a fill of each new block "
     "on its stream (sim: threaded mode)"},
    {"busy-us", true, "with --busy: microseconds each busy kernel runs (default 100)"},
    {"busy-every", true, "with --busy: operations between busy kernels (default 100)"},
    {"headroom", true,
     "hold device memory so that only this many times the trace's peak live bytes stay free (a tight device, "
     "where streams share their caches; default 0: the whole device)"},
    {"help", false, "print this help"},
};

std::string_view free_point_name(replay_free_point point) {
  switch (point) {
    case replay_free_point::requested: return "free_requested";
    case replay_free_point::completed: return "free_completed";
  }
  return "?";
}

/// The segment policy in STREAMSAFE_ALLOC_CONF's words, so a table of runs says which was which.
std::string policy_of(const allocator_options& options) {
  if (options.segments == segment_kind::fixed) return "fixed";
  switch (options.growth) {
    case expandable_growth::remap: return "expandable, remap";
    case expandable_growth::map_new: return "expandable, map_new";
    case expandable_growth::settle: return "expandable, settle";
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

struct replay_setup {
  std::size_t iterations = 1;
  bool busy = false;
  unsigned busy_us = 0;
  std::size_t busy_every = 0;
  double headroom = 0;
};

double per_op(std::uint64_t ns, std::uint64_t operations) {
  return operations == 0 ? 0.0 : static_cast<double>(ns) / static_cast<double>(operations);
}

void print_phase_json(const char* prefix, const replay_phase& p) {
  std::printf(",\"%s_ns_per_op\":%.1f,\"%s_allocator_ns_per_op\":%.1f,\"%s_timer_ns_per_op\":%.1f,"
              "\"%s_device_calls_per_iteration\":%.2f,\"%s_syncs_per_iteration\":%.2f,"
              "\"%s_cross_stream_reuses_per_iteration\":%.2f,\"%s_peak_live_bytes\":%llu,\"%s_peak_reserved_bytes\":%llu,"
              "\"%s_reserved_over_live\":%.4f",
              prefix, p.ns_per_op, prefix, p.allocator_ns_per_op, prefix, p.timer_ns_per_op, prefix,
              p.device_calls_per_iteration, prefix, p.host_syncs_per_iteration, prefix,
              p.cross_stream_reuses_per_iteration, prefix, static_cast<unsigned long long>(p.peak_live_bytes), prefix,
              static_cast<unsigned long long>(p.peak_reserved_bytes), prefix,
              ratio(p.peak_reserved_bytes, p.peak_live_bytes));
}

// Which calls a pass made: a switch that only gives memory back shows as unmaps and releases.
void print_calls_by_kind_json(const device_call_counts& c) {
  const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("\"device_calls_by_kind\":{\"create\":%llu,\"map\":%llu,\"set_access\":%llu,\"unmap\":%llu,"
              "\"release\":%llu,\"reserve\":%llu,\"free_range\":%llu,\"malloc\":%llu,\"free\":%llu}",
              u(c.create), u(c.map), u(c.set_access), u(c.unmap), u(c.release), u(c.reserve), u(c.free_range),
              u(c.malloc), u(c.free));
}

void print_json(const replay_result& r, const Device& device, const std::string& policy, const replay_setup& setup) {
  std::printf(
      "{\"device\":\"%s\",\"policy\":\"%s\",\"operations\":%llu,\"streams\":%zu,\"free_point\":\"%s\",\"peak_live_bytes\":%llu,"
      "\"peak_reserved_bytes\":%llu,\"reserved_over_live\":%.4f,\"original_peak_reserved_bytes\":%llu,"
      "\"original_reserved_over_live\":%.4f,\"device_allocations\":%llu,\"unmatched_frees\":%llu,\"ns_per_op\":%.1f,"
      "\"iterations\":%zu,\"busy\":%s,\"headroom\":%g,\"record_streams\":%llu,\"plan_activations\":%llu,\"plan_derailments\":%llu,"
      "\"planned_allocations\":%llu,\"plan_arena_bytes\":%llu",
      device.name().c_str(), policy.c_str(), static_cast<unsigned long long>(r.operations), r.streams,
      std::string(free_point_name(r.free_point)).c_str(), static_cast<unsigned long long>(r.peak_live_bytes),
      static_cast<unsigned long long>(r.peak_reserved_bytes), ratio(r.peak_reserved_bytes, r.peak_live_bytes),
      static_cast<unsigned long long>(r.original_peak_reserved_bytes),
      ratio(r.original_peak_reserved_bytes, r.peak_live_bytes), static_cast<unsigned long long>(r.device_allocations),
      static_cast<unsigned long long>(r.unmatched_frees), r.ns_per_op, r.iterations.size(),
      setup.busy ? "true" : "false", setup.headroom, static_cast<unsigned long long>(r.record_streams),
      static_cast<unsigned long long>(r.plan_activations), static_cast<unsigned long long>(r.plan_derailments),
      static_cast<unsigned long long>(r.planned_allocations), static_cast<unsigned long long>(r.plan_arena_bytes));
  print_phase_json("first", first_iteration(r));
  if (r.iterations.size() > 1) {
    print_phase_json("steady", steady_state(r));
    print_phase_json("last", last_iteration(r));
  }
  std::printf(",\"per_iteration\":[");
  for (std::size_t i = 0; i < r.iterations.size(); ++i) {
    const replay_iteration& it = r.iterations[i];
    std::printf("%s{\"ns_per_op\":%.1f,\"allocator_ns_per_op\":%.1f,\"timer_ns_per_op\":%.1f,\"device_calls\":%llu,\"host_syncs\":%llu,\"cross_stream_reuses\":%llu,"
                "\"peak_reserved_bytes\":%llu,\"peak_live_bytes\":%llu,",
                i == 0 ? "" : ",",
                per_op(it.elapsed_ns, it.operations), per_op(it.allocator_ns, it.operations), per_op(it.timer_ns, it.operations),
                static_cast<unsigned long long>(it.device_calls), static_cast<unsigned long long>(it.host_syncs),
                static_cast<unsigned long long>(it.cross_stream_reuses),
                static_cast<unsigned long long>(it.peak_reserved_bytes), static_cast<unsigned long long>(it.peak_live_bytes));
    print_calls_by_kind_json(it.device_calls_by_kind);
    std::printf("}");
  }
  std::printf("]}\n");
}

void print_phase_text(const char* name, const replay_phase& p) {
  constexpr double mib = 1 << 20;
  std::printf("%-16s %10.1f %12.1f %11.1f %14.1f %12.1f %14.1f %9.1f / %9.1f   %.4f\n", name, p.ns_per_op,
              p.allocator_ns_per_op, p.timer_ns_per_op, p.device_calls_per_iteration, p.host_syncs_per_iteration, p.cross_stream_reuses_per_iteration,
              static_cast<double>(p.peak_reserved_bytes) / mib, static_cast<double>(p.peak_live_bytes) / mib,
              ratio(p.peak_reserved_bytes, p.peak_live_bytes));
}

void print_text(const std::string& path, const replay_result& r, const Device& device, const std::string& policy,
                const replay_setup& setup) {
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
  if (r.plan_activations != 0 || r.plan_derailments != 0) {
    std::printf("repeat plan: %llu activation(s), %llu derailment(s), %llu allocations served from a %.1f MiB arena\n",
                static_cast<unsigned long long>(r.plan_activations), static_cast<unsigned long long>(r.plan_derailments),
                static_cast<unsigned long long>(r.planned_allocations), static_cast<double>(r.plan_arena_bytes) / mib);
  }
  if (r.unmatched_frees != 0) {
    std::printf("skipped %llu frees or record_streams of addresses allocated before the trace began\n",
                static_cast<unsigned long long>(r.unmatched_frees));
  }
  if (setup.headroom > 0) {
    std::printf("tight device: %.1f MiB free for the replay (%g x the peak live bytes)\n",
                static_cast<double>(r.peak_live_bytes) * setup.headroom / mib, setup.headroom);
  }
  if (setup.busy) {
    std::printf("device kept busy: a %u us kernel every %zu operations, a fill of each new block\n", setup.busy_us,
                setup.busy_every);
  }
  std::printf("%zu iteration(s); per iteration:\n", r.iterations.size());
  std::printf("%-16s %10s %12s %11s %14s %12s %14s %21s   %s\n", "", "ns/op", "in allocator", "of it clock",
              "device calls", "host syncs", "cross-stream", "reserved / live MiB", "reserved/live");
  print_phase_text("first iteration", first_iteration(r));
  if (r.iterations.size() > 1) {
    print_phase_text("steady (2..N)", steady_state(r));
    print_phase_text("last iteration", last_iteration(r));
  }
}

replay_setup setup_of(const args& parsed) {
  replay_setup setup;
  setup.iterations = parsed.unsigned_or("iterations", 1);
  if (setup.iterations == 0) throw usage_error("streamsafe replay: --iterations must be at least 1");
  setup.busy = parsed.has("busy");
  setup.busy_us = static_cast<unsigned>(parsed.unsigned_or("busy-us", 100));
  setup.busy_every = parsed.unsigned_or("busy-every", 100);
  if (setup.busy && setup.busy_every == 0) throw usage_error("streamsafe replay: --busy-every must be at least 1");
  setup.headroom = parsed.decimal_or("headroom", 0);
  return setup;
}

}  // namespace

int run_replay(const std::vector<std::string>& argv) {
  const args parsed("replay", argv, replay_options_spec);
  if (parsed.has("help")) {
    std::cout << usage("replay",
                       "TRACE [--backend sim|cuda] [--json] [--free-point requested|completed] [--conf TEXT] "
                       "[--iterations N] [--busy [--busy-us US] [--busy-every K]] [--headroom F]",
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
  const replay_setup setup = setup_of(parsed);
  const std::vector<trace_event> events = load_alloc_trace(path);
  const Device device = demo::replay_device(parsed.value_or("backend", "sim"), events, setup.busy);
  const demo::device_headroom headroom(device, events, setup.headroom);  // outlives the replay's allocator
  std::optional<demo::busy_device> busy;
  replay_loop loop{.iterations = setup.iterations,
                   .free_point = free_point == "requested" ? replay_free_point::requested : replay_free_point::completed,
                   .progress = progress_printer(events.size() * setup.iterations)};
  if (setup.busy) loop.work = busy.emplace(device).work(setup.busy_us, setup.busy_every);
  const replay_result result = replay_alloc_trace(events, device, options, loop);
  if (loop.progress) std::cerr << '\n';
  if (parsed.has("json")) {
    print_json(result, device, policy_of(options), setup);
  } else {
    print_text(path, result, device, policy_of(options), setup);
  }
  return 0;
}

}  // namespace streamsafe::cli
