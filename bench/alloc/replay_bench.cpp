// Whole-process allocation traces replayed as a training loop, side by side: streamsafe's caching
// allocator under each segment policy, PyTorch's c10 CUDACachingAllocator (native and with
// expandable_segments), and cudaMallocAsync. Every allocator runs the same loop as
// `streamsafe replay --iterations N [--busy]` (replay_alloc_trace over a replay_target), so the
// figures differ only by the allocator.
//
//   replay_bench TRACE... [--resource LIST] [--backend sim|cuda] [--iterations N]
//                [--busy [--busy-us US] [--busy-every K]] [--headroom F] [--json]
//
// One line per (trace, resource): a table row, or with --json one JSON object. A resource that
// cannot run here (no GPU, no libtorch) prints a line saying why; one that fails prints its
// error, and the exit status is then 1.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "args.hpp"
#include "busy_device.hpp"
#include "replay_device.hpp"
#include "replay_resource.hpp"
#include "streamsafe/alloc/allocator_options.hpp"
#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe::bench {

namespace {

const std::vector<cli::option_spec> options_spec = {
    {"resource", true,
     "comma-separated: streamsafe:POLICY (remap, settle, map_new, fixed) or streamsafe:CONF "
     "(a STREAMSAFE_ALLOC_CONF string, its options joined by + instead of commas), c10, c10_expandable, "
     "cuda_async (default: the four streamsafe policies)"},
    {"backend", true, "streamsafe's device: sim (default) or cuda; c10 and cuda_async always run on cuda"},
    {"iterations", true, "passes over each trace, as `streamsafe replay --iterations` (default 10)"},
    {"busy", false, "keep the device busy as `streamsafe replay --busy` does"},
    {"busy-us", true, "with --busy: microseconds each busy kernel runs (default 100)"},
    {"busy-every", true, "with --busy: operations between busy kernels (default 100)"},
    {"headroom", true,
     "hold device memory so that only this many times the trace's peak live bytes stay free, as `streamsafe "
     "replay --headroom` (default 0: the whole device)"},
    {"json", false, "one JSON object per run instead of a table row"},
    {"help", false, "print this help"},
};

struct bench_setup {
  std::string backend;
  std::size_t iterations = 10;
  bool busy = false;
  unsigned busy_us = 0;
  std::size_t busy_every = 0;
  double headroom = 0;
  bool json = false;
  std::string command;  // as run, for the raw output
  std::string commit;  // STREAMSAFE_COMMIT (the driver script sets it from git)
};

/// A streamsafe resource's STREAMSAFE_ALLOC_CONF: a bare policy name is shorthand, and + stands
/// for the conf's commas (which separate the resources).
std::string streamsafe_conf(const std::string& spec) {
  std::string conf = spec.substr(spec.find(':') + 1);
  std::replace(conf.begin(), conf.end(), '+', ',');
  if (conf == "fixed") return "segments:fixed";
  if (conf.find(':') == std::string::npos) return "expandable_growth:" + conf;
  return conf;
}

bool is_streamsafe(const std::string& spec) { return spec.rfind("streamsafe:", 0) == 0; }

void check_known(const std::string& spec) {
  if (is_streamsafe(spec) || spec == "c10" || spec == "c10_expandable" || spec == "cuda_async") return;
  throw usage_error("replay_bench: unknown --resource '" + spec + "' (see --help)");
}

/// The resource named `spec` on `device`, with its streams already made.
replay_resource make_resource(const std::string& spec, const Device& device) {
  if (is_streamsafe(spec)) {
    return replay_resource{.target = make_caching_replay_target(device, parse_alloc_conf(streamsafe_conf(spec))),
                           .counted = {.device_calls = true, .host_syncs = true, .cross_stream_reuses = true}};
  }
  if (spec == "c10") return make_c10_replay(false);
  if (spec == "c10_expandable") return make_c10_replay(true);
  check_known(spec);
  return make_cuda_async_replay();
}

struct run_result {
  replay_result replay;
  replay_counted counted;
  std::string device;
};

/// One trace through one resource; nullopt with `why` when the resource cannot run here.
std::optional<run_result> run(const std::vector<trace_event>& events, const std::string& spec,
                              const bench_setup& setup, std::string& why) {
  if (!is_streamsafe(spec) && Device::cuda_device_count() == 0) {
    why = "no CUDA device";
    return std::nullopt;
  }
  const Device device = demo::replay_device(is_streamsafe(spec) ? setup.backend : "cuda", events, setup.busy);
  // The headroom, the streams and the busy work are made before the target and so outlive it.
  const demo::device_headroom headroom(device, events, setup.headroom);
  const replay_streams streams = make_replay_streams(events, device);
  std::optional<demo::busy_device> busy;
  replay_loop loop{.iterations = setup.iterations};
  if (setup.busy) loop.work = busy.emplace(device).work(setup.busy_us, setup.busy_every);
  replay_resource resource = make_resource(spec, device);
  if (!resource.target) {
    why = resource.why;
    return std::nullopt;
  }
  run_result result{.replay = replay_alloc_trace(events, streams, *resource.target, loop),
                    .counted = resource.counted,
                    .device = device.name()};
  return result;
}

double ratio(std::uint64_t reserved, std::uint64_t live) {
  return live == 0 ? 0.0 : static_cast<double>(reserved) / static_cast<double>(live);
}

/// JSON text of a figure, or null when the resource does not count it.
std::string counted_or_null(bool counted, double value) {
  if (!counted) return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void print_phase_json(std::ostream& out, const char* prefix, const replay_phase& p, const replay_counted& counted) {
  out << ",\"" << prefix << "_ns_per_op\":" << p.ns_per_op << ",\"" << prefix
      << "_allocator_ns_per_op\":" << p.allocator_ns_per_op << ",\"" << prefix << "_timer_ns_per_op\":" << p.timer_ns_per_op
      << ",\"" << prefix << "_device_calls_per_iteration\":" << counted_or_null(counted.device_calls, p.device_calls_per_iteration)
      << ",\"" << prefix << "_syncs_per_iteration\":" << counted_or_null(counted.host_syncs, p.host_syncs_per_iteration)
      << ",\"" << prefix << "_cross_stream_reuses_per_iteration\":"
      << counted_or_null(counted.cross_stream_reuses, p.cross_stream_reuses_per_iteration) << ",\"" << prefix
      << "_peak_live_bytes\":" << p.peak_live_bytes << ",\"" << prefix << "_peak_reserved_bytes\":" << p.peak_reserved_bytes
      << ",\"" << prefix << "_reserved_over_live\":" << ratio(p.peak_reserved_bytes, p.peak_live_bytes);
}

/// The fields every line starts with, so that each line of the raw output stands alone.
std::string run_header(const std::string& trace, const std::string& spec, const bench_setup& setup) {
  std::ostringstream out;
  out << "{\"bench\":\"replay_bench\",\"commit\":" << json_string(setup.commit)
      << ",\"command\":" << json_string(setup.command) << ",\"trace\":" << json_string(trace)
      << ",\"resource\":" << json_string(spec);
  if (is_streamsafe(spec)) out << ",\"conf\":" << json_string(streamsafe_conf(spec));
  if (const char* conf = std::getenv("PYTORCH_CUDA_ALLOC_CONF"); conf != nullptr && spec.rfind("c10", 0) == 0) {
    out << ",\"pytorch_cuda_alloc_conf\":" << json_string(conf);
  }
  out << ",\"busy\":" << (setup.busy ? "true" : "false") << ",\"headroom\":" << setup.headroom
      << ",\"iterations\":" << setup.iterations;
  return out.str();
}

double per_op_of(std::uint64_t ns, std::uint64_t operations) {
  return operations == 0 ? 0.0 : static_cast<double>(ns) / static_cast<double>(operations);
}

/// `,"per_iteration_NAME":[...]`: `write(pass)` puts each iteration's value on `out`.
template <class Write>
void print_per_iteration(std::ostream& out, const char* name, const run_result& r, Write write) {
  out << ",\"per_iteration_" << name << "\":[";
  const char* separator = "";
  for (const replay_iteration& pass : r.replay.iterations) {
    out << std::exchange(separator, ",");
    write(pass);
  }
  out << "]";
}

/// Each iteration's host time in the allocator per op (and the clock's share of it) and device
/// calls, so that runs repeated in rounds can be compared iteration by iteration (medians over
/// the rounds).
void print_iterations_json(std::ostream& out, const run_result& r) {
  print_per_iteration(out, "allocator_ns_per_op", r,
                      [&](const replay_iteration& pass) { out << per_op_of(pass.allocator_ns, pass.operations); });
  print_per_iteration(out, "timer_ns_per_op", r,
                      [&](const replay_iteration& pass) { out << per_op_of(pass.timer_ns, pass.operations); });
  print_per_iteration(out, "device_calls", r, [&](const replay_iteration& pass) {
    if (r.counted.device_calls) {
      out << pass.device_calls;
    } else {
      out << "null";
    }
  });
}

void print_json(const std::string& header, const run_result& r) {
  std::ostringstream out;
  out.precision(6);
  out << std::fixed;
  out << header << ",\"device\":" << json_string(r.device) << ",\"streams\":" << r.replay.streams
      << ",\"operations\":" << r.replay.operations << ",\"record_streams\":" << r.replay.record_streams
      << ",\"unmatched_frees\":" << r.replay.unmatched_frees;
  print_phase_json(out, "first", first_iteration(r.replay), r.counted);
  if (r.replay.iterations.size() > 1) {
    print_phase_json(out, "steady", steady_state(r.replay), r.counted);
    print_phase_json(out, "last", last_iteration(r.replay), r.counted);
  }
  print_iterations_json(out, r);
  std::cout << out.str() << "}" << std::endl;
}

std::string counted_cell(bool counted, double value) { return counted ? counted_or_null(true, value) : "-"; }

std::string mode_of(const bench_setup& setup) {
  std::ostringstream out;
  out << (setup.busy ? "busy" : "idle");
  if (setup.headroom > 0) out << ", headroom " << setup.headroom;
  return out.str();
}

void print_row(const std::string& trace, const std::string& spec, const bench_setup& setup, const run_result& r) {
  const replay_phase first = first_iteration(r.replay);
  const replay_phase steady = steady_state(r.replay);
  std::printf("| %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %s | %s | %.4f | %.4f |\n", trace.c_str(),
              spec.c_str(), mode_of(setup).c_str(), first.ns_per_op, steady.ns_per_op, steady.allocator_ns_per_op,
              last_iteration(r.replay).allocator_ns_per_op,
              counted_cell(r.counted.device_calls, first.device_calls_per_iteration).c_str(),
              counted_cell(r.counted.device_calls, steady.device_calls_per_iteration).c_str(),
              counted_cell(r.counted.host_syncs, steady.host_syncs_per_iteration).c_str(),
              counted_cell(r.counted.cross_stream_reuses, steady.cross_stream_reuses_per_iteration).c_str(),
              ratio(first.peak_reserved_bytes, first.peak_live_bytes),
              ratio(steady.peak_reserved_bytes, steady.peak_live_bytes));
  std::fflush(stdout);
}

void print_table_header(const bench_setup& setup) {
  std::printf("replay_bench at %s: %s\n\n", setup.commit.c_str(), setup.command.c_str());
  std::printf("| trace | resource | mode | first ns/op | steady ns/op | steady ns/op in allocator | last ns/op in "
              "allocator | first device calls | steady device calls / iter | steady host syncs / iter | steady "
              "cross-stream reuses / iter | first reserved/live | steady reserved/live |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

/// The line of a run without figures: `kind` is skipped or error.
void print_no_figures(const std::string& header, const std::string& trace, const std::string& spec,
                      const std::string& kind, const std::string& why, const bench_setup& setup) {
  if (setup.json) {
    std::cout << header << ",\"" << kind << "\":" << json_string(why) << "}" << std::endl;
  } else {
    std::printf("| %s | %s | %s: %s |||||||||\n", trace.c_str(), spec.c_str(), kind.c_str(), why.c_str());
  }
}

/// Runs one trace through one resource and prints its line; false when it failed.
bool bench_one(const std::string& path, const std::vector<trace_event>& events, const std::string& spec,
               const bench_setup& setup) {
  const std::string trace = std::filesystem::path(path).filename().string();
  const std::string header = run_header(trace, spec, setup);
  std::string why;
  try {
    const std::optional<run_result> r = run(events, spec, setup, why);
    if (!r) {
      print_no_figures(header, trace, spec, "skipped", why, setup);
    } else if (setup.json) {
      print_json(header, *r);
    } else {
      print_row(trace, spec, setup, *r);
    }
    return true;
  } catch (const std::exception& e) {
    print_no_figures(header, trace, spec, "error", e.what(), setup);
    return false;
  }
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> words;
  std::stringstream in(list);
  for (std::string word; std::getline(in, word, ',');) {
    if (!word.empty()) words.push_back(word);
  }
  return words;
}

bench_setup setup_of(const cli::args& parsed, int argc, char** argv) {
  bench_setup setup{.backend = parsed.value_or("backend", "sim"),
                    .iterations = parsed.unsigned_or("iterations", 10),
                    .busy = parsed.has("busy"),
                    .busy_us = static_cast<unsigned>(parsed.unsigned_or("busy-us", 100)),
                    .busy_every = parsed.unsigned_or("busy-every", 100),
                    .headroom = parsed.decimal_or("headroom", 0),
                    .json = parsed.has("json")};
  if (setup.iterations == 0) throw usage_error("replay_bench: --iterations must be at least 1");
  if (setup.busy && setup.busy_every == 0) throw usage_error("replay_bench: --busy-every must be at least 1");
  for (int i = 0; i < argc; ++i) setup.command += (i == 0 ? "" : " ") + std::string(argv[i]);
  const char* commit = std::getenv("STREAMSAFE_COMMIT");
  setup.commit = commit != nullptr ? commit : "unknown (set STREAMSAFE_COMMIT)";
  return setup;
}

int bench_main(int argc, char** argv) {
  const cli::args parsed("replay_bench", std::vector<std::string>(argv + 1, argv + argc), options_spec);
  if (parsed.has("help") || parsed.positionals().empty()) {
    std::cout << cli::usage("replay_bench",
                            "TRACE... [--resource LIST] [--backend sim|cuda] [--iterations N] "
                            "[--busy [--busy-us US] [--busy-every K]] [--headroom F] [--json]",
                            options_spec);
    return parsed.has("help") ? 0 : 2;
  }
  const bench_setup setup = setup_of(parsed, argc, argv);
  const std::vector<std::string> resources =
      split(parsed.value_or("resource", "streamsafe:remap,streamsafe:settle,streamsafe:map_new"));
  for (const std::string& spec : resources) check_known(spec);
  if (!setup.json) print_table_header(setup);
  bool ok = true;
  for (const std::string& path : parsed.positionals()) {
    const std::vector<trace_event> events = load_alloc_trace(path);
    for (const std::string& spec : resources) ok = bench_one(path, events, spec, setup) && ok;
  }
  return ok ? 0 : 1;
}

}  // namespace

}  // namespace streamsafe::bench

int main(int argc, char** argv) {
  try {
    return streamsafe::bench::bench_main(argc, argv);
  } catch (const streamsafe::usage_error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "replay_bench: " << e.what() << '\n';
    return 2;
  }
}
