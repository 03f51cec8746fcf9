// streamsafe pipeline [--backend sim|cuda] [--config copy_bound|sm_bound|balanced] [--steps N]
//                     [--depth D] [--ranks N] [--bucket-mib M] [--json] [--out DIR] [--check]:
// runs a synthetic five-stage training step (H2D copy of a uint8 batch, preprocess, an MLP's
// forward and backward, the all-reduce of its gradient buckets, an SGD step) on the pipeline, and
// prints each stage's time alone, the bound, the measured step, the efficiency, the H2D rate, the
// all-reduce's time and the fraction of it hidden behind the other stages, host syncs and
// allocations in the loop, and the hazards the engine found. --ranks N (sim only) runs N sim
// devices in one process, one host thread and pipeline per rank; rank 0's figures are printed. sim is always checked under the hazard engine (report mode);
// cuda with --check. The checked run is a separate run before the measured ones, so the engine's
// cost never enters the figures. On sim, every time is host time (sim kernels are host loops).
// Exit 0: ran (whatever it found); 2: bad options; 3: a failure (named with its batch and stage).
#include <algorithm>
#include <barrier>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "progress_line.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/hazard/hazard.hpp"
#include "streamsafe/hazard/report_text.hpp"
#include "streamsafe/hazard/tracker.hpp"
#include "streamsafe/monitor/chrome_trace.hpp"
#include "streamsafe/monitor/collector.hpp"
#include "streamsafe/pipeline/bound.hpp"
#include "streamsafe/pipeline/collectives/sim_communicator.hpp"
#include "streamsafe/pipeline/pipeline.hpp"
#include "training_pipeline.hpp"

namespace streamsafe::cli {

namespace {

const std::vector<option_spec> pipeline_options_spec = {
    {"backend", true, "sim (default: no GPU needed) or cuda"},
    {"config", true, "copy_bound, sm_bound or balanced (default balanced)"},
    {"steps", true, "batches in the measured run (default 40 on sim, 200 on cuda)"},
    {"depth", true, "ring slots: batches in flight (default 2)"},
    {"ranks", true, "sim only: ranks all-reducing the gradients, one sim device and host thread each (default 1)"},
    {"bucket-mib", true, "the gradient buckets' cap in MiB, fractions allowed (default 25 on cuda, one layer on sim)"},
    {"json", false, "print one JSON object instead of text"},
    {"out", true, "write pipeline.json and a Perfetto timeline of a few steps (pipeline_trace.json) there"},
    {"check", false, "cuda: also run under the hazard engine (report mode) first; sim always does"},
    {"help", false, "print this help"},
};

constexpr std::size_t alone_steps = 5;
constexpr std::size_t checked_steps = 8;
constexpr std::size_t traced_steps = 4;

struct pipeline_setup {
  backend_kind backend = backend_kind::sim;
  std::string config;
  std::size_t steps = 0;
  std::size_t depth = 2;
  std::size_t ranks = 1;
  std::optional<std::size_t> bucket_cap;  // bytes; default: the config's
  bool check = false;
  std::optional<std::string> out;
};

struct hazard_summary {
  bool checked = false;
  std::size_t hazards = 0;        // all but informational
  std::size_t informational = 0;  // redundant or unrecorded waits
  std::string report;             // the engine's words for each
};

struct measurement {
  std::vector<pipeline::stage_time> stages;
  pipeline::run_stats loop;
  pipeline::bound_report bound;
  double h2d_gbps = 0;
  /// The share of the all-reduce's time alone that did not lengthen the step: 1 - max(0, step -
  /// the bound of the other resources) / the all-reduce alone, clamped to [0, 1].
  double allreduce_hidden = 0;
  std::size_t collector_ops = 0;
  bool collector_active = false;
};

std::size_t bucket_bytes(const std::string& mib) {
  double value = 0;
  try {
    value = std::stod(mib);
  } catch (const std::exception&) {
    value = 0;
  }
  const auto bytes = static_cast<std::size_t>(value * 1024 * 1024);
  if (bytes < sizeof(float)) throw usage_error("streamsafe pipeline: --bucket-mib must be a positive number, not '" + mib + "'");
  return bytes;
}

pipeline_setup setup_of(const args& parsed) {
  pipeline_setup setup;
  const std::string backend = parsed.value_or("backend", "sim");
  if (backend != "sim" && backend != "cuda") throw usage_error("streamsafe pipeline: --backend must be sim or cuda, not '" + backend + "'");
  setup.backend = backend == "cuda" ? backend_kind::cuda : backend_kind::sim;
  setup.config = parsed.value_or("config", "balanced");
  setup.steps = parsed.unsigned_or("steps", setup.backend == backend_kind::cuda ? 200 : 40);
  setup.depth = parsed.unsigned_or("depth", 2);
  if (setup.steps < 2) throw usage_error("streamsafe pipeline: --steps must be at least 2");
  if (setup.depth == 0) throw usage_error("streamsafe pipeline: --depth must be at least 1");
  setup.ranks = parsed.unsigned_or("ranks", 1);
  if (setup.ranks == 0) throw usage_error("streamsafe pipeline: --ranks must be at least 1");
  if (setup.ranks > 1 && setup.backend == backend_kind::cuda) {
    throw usage_error("streamsafe pipeline: --ranks above 1 runs on sim only (one process holds one cuda rank)");
  }
  if (const auto mib = parsed.value("bucket-mib")) setup.bucket_cap = bucket_bytes(*mib);
  setup.check = parsed.has("check") || setup.backend == backend_kind::sim;
  setup.out = parsed.value("out");
  return setup;
}

// The sim device runs each stream on its own thread, so stages overlap as on a GPU.
Device device_for(backend_kind backend) {
  if (backend == backend_kind::cuda) return Device::cuda(0);
  return Device::sim(sim_options{.memory_capacity = std::size_t{2} << 30, .mode = sim_mode::threaded});
}

void run_checked(hazard::tracker& hazards, const Device& device, caching_allocator& allocator,
                 demo::training_step& training, std::size_t depth) {
  pipeline::pipeline checked(device, allocator, training.spec(depth), &hazards);
  (void)checked.run(checked_steps);
}

hazard_summary summary_of(const hazard::tracker& hazards) {
  hazard_summary summary{.checked = true};
  for (const hazard::hazard& found : hazards.hazards()) {
    ++(hazard::is_informational(found.kind) ? summary.informational : summary.hazards);
    summary.report += hazard::describe(found) + "\n";
  }
  return summary;
}

// Busy time per stage stream between two usage reports, per step.
std::vector<double> busy_per_step(const monitor::usage_report& before, const monitor::usage_report& after,
                                  const pipeline::pipeline& measured, std::size_t steps) {
  std::vector<double> busy(measured.stage_count(), 0);
  for (std::size_t k = 0; k < measured.stage_count(); ++k) {
    const std::string& name = measured.stream_of(k).name();
    for (const monitor::stream_usage& s : after.streams) busy[k] += s.name == name ? s.busy_us : 0;
    for (const monitor::stream_usage& s : before.streams) busy[k] -= s.name == name ? s.busy_us : 0;
    busy[k] /= static_cast<double>(steps);
  }
  return busy;
}

double hidden_fraction(const pipeline::bound_report& bound) {
  if (bound.network_us <= 0) return 1;
  const double others = std::max({bound.h2d_us, bound.d2h_us, bound.sm_us});
  const double exposed = std::max(0.0, bound.step_us - others);
  return std::clamp(1 - exposed / bound.network_us, 0.0, 1.0);
}

measurement measure(const Device& device, caching_allocator& allocator, demo::training_step& training,
                    const pipeline_setup& setup, monitor::collector& collector, bool lead) {
  measurement m;
  m.collector_active = collector.status() == monitor::collector_status::active;
  pipeline::pipeline measured(device, allocator, training.spec(setup.depth));
  const monitor::usage_report start = collector.usage();
  (void)measured.run(alone_steps, pipeline::run_mode::alone);
  const monitor::usage_report alone = collector.usage();
  const std::function<void(std::uint64_t)> progress =
      lead ? progress_line("pipeline", setup.steps, std::to_string(setup.steps) + " steps") : nullptr;
  if (progress) training.on_batch([&progress](std::size_t batch) { progress(batch + 1); });
  m.loop = measured.run(setup.steps);
  training.on_batch(nullptr);
  if (progress) std::cerr << '\n';
  const monitor::usage_report overlapped = collector.usage();
  const std::vector<double> alone_us = busy_per_step(start, alone, measured, alone_steps);
  const std::vector<double> busy_us = busy_per_step(alone, overlapped, measured, setup.steps);
  for (std::size_t k = 0; k < measured.stage_count(); ++k) {
    m.stages.push_back({measured.stage(k).name, measured.stage(k).resource, alone_us[k], busy_us[k]});
  }
  const double step_us = m.loop.step_us > 0 ? m.loop.step_us : m.loop.loop_us / static_cast<double>(setup.steps);
  m.bound = pipeline::compute_bound(m.stages, step_us);
  const double h2d_busy = m.stages.front().busy_us;
  m.h2d_gbps = h2d_busy > 0 ? static_cast<double>(training.config().batch_bytes()) / (h2d_busy * 1e3) : 0;
  m.allreduce_hidden = hidden_fraction(m.bound);
  m.collector_ops = collector.ops_seen();
  return m;
}

// The sync stage's figures: ranks, the bucket plan, the all-reduce alone and how much of it hid.
std::string sync_json(const pipeline_setup& setup, const demo::training_step& training, const measurement& m) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(3);
  const collectives::bucket_plan& plan = training.plan();
  out << ",\"ranks\":" << setup.ranks << ",\"communicator\":\"" << training.communicator().name()
      << "\",\"bucket_cap_bytes\":" << plan.cap_bytes() << ",\"buckets\":" << plan.buckets().size() << ",\"bucket_bytes\":[";
  for (std::size_t b = 0; b < plan.buckets().size(); ++b) out << (b == 0 ? "" : ",") << plan.buckets()[b].bytes;
  out << "],\"allreduce_us\":" << m.bound.network_us << ",\"allreduce_hidden\":" << m.allreduce_hidden;
  return out.str();
}

std::string bucket_sizes(const collectives::bucket_plan& plan) {
  std::string sizes;
  for (const collectives::bucket& b : plan.buckets()) sizes += (sizes.empty() ? "" : ", ") + std::to_string(b.bytes);
  return sizes;
}

std::string json_of(const pipeline_setup& setup, const Device& device, const demo::training_step& training,
                    const measurement& m, const hazard_summary& hazards) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(3);
  out << "{\"backend\":\"" << (setup.backend == backend_kind::cuda ? "cuda" : "sim") << "\",\"device\":\"" << device.name()
      << "\",\"config\":\"" << setup.config << "\",\"steps\":" << setup.steps << ",\"depth\":" << setup.depth
      << ",\"step_us\":" << m.bound.step_us << ",\"loop_us\":" << m.loop.loop_us << ",\"bound_us\":" << m.bound.bound_us
      << ",\"bound_resource\":\"" << pipeline::resource_name(m.bound.limit) << "\",\"h2d_us\":" << m.bound.h2d_us
      << ",\"sm_us\":" << m.bound.sm_us << ",\"network_us\":" << m.bound.network_us << ",\"efficiency\":" << m.bound.efficiency << ",\"h2d_gbps\":" << m.h2d_gbps
      << ",\"batch_bytes\":" << training.config().batch_bytes() << ",\"loop_allocations\":" << m.loop.loop_allocations
      << ",\"loop_frees\":" << m.loop.loop_frees << ",\"loop_host_syncs\":" << m.loop.loop_host_syncs
      << ",\"fence_waits\":" << m.loop.fence_waits << ",\"fence_waits_blocked\":" << m.loop.fence_waits_blocked
      << ",\"loop_events_created\":" << m.loop.loop_events_created << ",\"events\":" << m.loop.events
      << ",\"checked\":" << (hazards.checked ? "true" : "false") << ",\"hazards\":" << hazards.hazards
      << ",\"informational_findings\":" << hazards.informational << ",\"collector_active\":"
      << (m.collector_active ? "true" : "false") << ",\"last_loss\":" << training.last_loss() << sync_json(setup, training, m)
      << ",\"stages\":[";
  for (std::size_t k = 0; k < m.stages.size(); ++k) {
    const pipeline::stage_time& s = m.stages[k];
    out << (k == 0 ? "" : ",") << "{\"name\":\"" << s.name << "\",\"stream\":\"" << s.name << "\",\"resource\":\""
        << pipeline::resource_name(s.resource) << "\",\"alone_us\":" << s.alone_us << ",\"busy_us\":" << s.busy_us << "}";
  }
  out << "]}";
  return out.str();
}

void print_text(const pipeline_setup& setup, const Device& device, const demo::training_step& training,
                const measurement& m, const hazard_summary& hazards) {
  const demo::training_config& c = training.config();
  std::printf("pipeline %s on %s: %zu images of %zux%zu, %zu layer(s) of %zu, depth %zu, %zu steps, %zu rank(s)\n",
              setup.config.c_str(), device.name().c_str(), c.shape.images, c.shape.height, c.shape.width, c.layers, c.hidden,
              setup.depth, setup.steps, setup.ranks);
  if (setup.backend == backend_kind::sim) std::printf("(sim: every time is host time; sim kernels are host loops)\n");
  if (!m.collector_active) std::printf("(the monitor's collector is inactive: busy times are 0)\n");
  std::printf("%-12s %-10s %12s %12s\n", "stage", "resource", "alone us", "busy us");
  for (const pipeline::stage_time& s : m.stages) {
    std::printf("%-12s %-10s %12.1f %12.1f\n", s.name.c_str(), std::string(pipeline::resource_name(s.resource)).c_str(),
                s.alone_us, s.busy_us);
  }
  std::printf("bound: %.1f us (%s; H2D %.1f, SMs %.1f, network %.1f)\n", m.bound.bound_us,
              std::string(pipeline::resource_name(m.bound.limit)).c_str(), m.bound.h2d_us, m.bound.sm_us, m.bound.network_us);
  const collectives::bucket_plan& plan = training.plan();
  std::printf("sync:  %s, %zu bucket(s) of %s B (cap %zu B); all-reduce %.1f us alone", training.communicator().name().c_str(),
              plan.buckets().size(), bucket_sizes(plan).c_str(), plan.cap_bytes(), m.bound.network_us);
  if (m.bound.network_us > 0) {
    std::printf(", %.0f%% hidden\n", 100 * m.allreduce_hidden);
  } else {
    std::printf(" (nothing to hide: it took no measurable time alone)\n");
  }
  std::printf("step:  %.1f us   efficiency %.3f (bound / step)\n", m.bound.step_us, m.bound.efficiency);
  std::printf("H2D:   %.2f GB/s while copying\n", m.h2d_gbps);
  std::printf("loop:  %llu allocations, %llu frees, %llu host syncs; %llu fence waits (%llu blocked); %llu events created\n",
              static_cast<unsigned long long>(m.loop.loop_allocations), static_cast<unsigned long long>(m.loop.loop_frees),
              static_cast<unsigned long long>(m.loop.loop_host_syncs), static_cast<unsigned long long>(m.loop.fence_waits),
              static_cast<unsigned long long>(m.loop.fence_waits_blocked),
              static_cast<unsigned long long>(m.loop.loop_events_created));
  if (!hazards.checked) {
    std::printf("hazards: not checked (--check runs the engine first)\n");
    return;
  }
  const std::string over = setup.ranks > 1 ? " on each of " + std::to_string(setup.ranks) + " ranks, one engine over their devices" : "";
  std::printf("hazards: %zu (and %zu informational) in %zu checked steps%s\n%s", hazards.hazards, hazards.informational,
              checked_steps, over.c_str(), hazards.report.c_str());
}

void write_outputs(const std::string& dir, const std::string& json, monitor::collector& collector,
                   pipeline::pipeline& traced) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/pipeline.json") << json << '\n';
  const monitor::trace timeline = collector.capture_window([&] { (void)traced.run(traced_steps); });
  std::ofstream trace_file(dir + "/pipeline_trace.json");
  monitor::write_chrome_trace(trace_file, timeline);
}

demo::training_config config_of(const pipeline_setup& setup) {
  demo::training_config config = demo::training_config_for(setup.config, setup.backend);
  if (setup.bucket_cap) config.bucket_cap = *setup.bucket_cap;
  return config;
}

// Once every rank's checked run is done: reads the shared tracker's hazards and detaches it, so
// the measured runs pay nothing for it.
struct summarize_checks {
  std::optional<hazard::tracker>* shared;
  hazard_summary* summary;
  std::exception_ptr* failure;
  void operator()() noexcept {
    try {
      if (*shared) *summary = summary_of(**shared);
    } catch (...) {
      *failure = std::current_exception();
    }
    shared->reset();
  }
};

// Where a rank's checked run goes: with several ranks, one tracker over every rank's device (so
// the ranks' collectives order their streams and an access to another rank's bytes is checked),
// and a barrier whose completion reads the hazards once every rank's checked run is done.
struct rank_check {
  hazard::tracker* shared = nullptr;
  std::barrier<summarize_checks>* all_checked = nullptr;
  const hazard_summary* summary = nullptr;  // set by the barrier's completion
  bool* arrived = nullptr;                   // the rank's own: it reached the barrier
};

hazard_summary check_alone(const Device& device, caching_allocator& allocator, demo::training_step& training,
                           std::size_t depth) {
  hazard::tracker hazards(device, hazard::policy::report);
  run_checked(hazards, device, allocator, training, depth);
  return summary_of(hazards);
}

// One rank's whole run: the checked run, the measured ones, the traced one; every rank runs the
// same pipelines in the same order, so their collectives meet. The lead rank prints.
void run_rank(const pipeline_setup& setup, const Device& device, collectives::communicator* comm, bool json, bool lead,
              const rank_check& ranks = {}) {
  demo::training_step training(config_of(setup), setup.backend, comm);
  caching_allocator allocator(device);
  hazard_summary hazards;
  if (ranks.shared != nullptr) {
    run_checked(*ranks.shared, device, allocator, training, setup.depth);
    *ranks.arrived = true;
    ranks.all_checked->arrive_and_wait();
    hazards = *ranks.summary;
  } else if (setup.check) {
    hazards = check_alone(device, allocator, training, setup.depth);
  }
  monitor::collector collector(device);
  const measurement m = measure(device, allocator, training, setup, collector, lead);
  const std::string text = json_of(setup, device, training, m, hazards);
  if (setup.out) {
    pipeline::pipeline traced(device, allocator, training.spec(setup.depth));
    if (lead) {
      write_outputs(*setup.out, text, collector, traced);
    } else {
      (void)traced.run(traced_steps);
    }
  }
  if (!lead) return;
  if (json) {
    std::printf("%s\n", text.c_str());
  } else {
    print_text(setup, device, training, m, hazards);
  }
}

// --ranks N on sim: a sim device, a communicator and a host thread per rank; the first failure
// is rethrown after every thread joined (the group aborts, so no rank waits for a failed one).
// The checked runs share one tracker over every rank's device (threaded sim devices, as the
// tracker requires); a rank that fails drops out of the barrier instead of leaving the others
// waiting on it.
void run_sim_ranks(const pipeline_setup& setup, bool json) {
  auto group = std::make_shared<collectives::sim_group>(static_cast<int>(setup.ranks));
  std::vector<Device> devices;
  for (std::size_t r = 0; r < setup.ranks; ++r) devices.push_back(device_for(setup.backend));
  std::optional<hazard::tracker> shared;
  if (setup.check) shared.emplace(std::span<const Device>(devices), hazard::policy::report);
  hazard_summary summary;
  std::exception_ptr summary_failure;
  std::barrier all_checked(static_cast<std::ptrdiff_t>(setup.ranks), summarize_checks{&shared, &summary, &summary_failure});
  hazard::tracker* const shared_tracker = shared ? &*shared : nullptr;
  std::vector<std::exception_ptr> failures(setup.ranks);
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < setup.ranks; ++r) {
    threads.emplace_back([&, r] {
      bool arrived = false;
      try {
        collectives::sim_communicator comm(group, static_cast<int>(r));
        run_rank(setup, devices[r], &comm, json, r == 0, rank_check{shared_tracker, &all_checked, &summary, &arrived});
      } catch (...) {
        failures[r] = std::current_exception();
        if (!arrived) all_checked.arrive_and_drop();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  if (summary_failure) std::rethrow_exception(summary_failure);
}

}  // namespace

int run_pipeline(const std::vector<std::string>& argv) {
  const args parsed("pipeline", argv, pipeline_options_spec);
  if (parsed.has("help")) {
    std::cout << usage("pipeline",
                       "[--backend sim|cuda] [--config copy_bound|sm_bound|balanced] [--steps N] [--depth D] [--ranks N] "
                       "[--bucket-mib M] [--json] [--out DIR] [--check]",
                       pipeline_options_spec);
    return 0;
  }
  const pipeline_setup setup = setup_of(parsed);
  if (setup.ranks == 1) {
    run_rank(setup, device_for(setup.backend), nullptr, parsed.has("json"), true);
    return 0;
  }
  run_sim_ranks(setup, parsed.has("json"));
  return 0;
}

}  // namespace streamsafe::cli
