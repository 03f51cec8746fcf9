// pipeline_compare_bench: one binary, one run, the same kernels everywhere. The synthetic
// training step of `streamsafe pipeline` (training_pipeline.hpp) on the pipeline and on the
// loops people write by hand (hand_loops.hpp: one stream, the four-stream loop, Apex's
// prefetcher), in each config. Per config: the bound from the pipeline's stages run alone, then
// each variant warmed up, then `reps` rounds of `steps` batches that take the variants in turn
// (so drift over the run is shared), each variant's median, min and max step reported against
// the bound. On sim every figure is host time (sim kernels are host loops): a smoke test, not a
// performance figure. With --check (always on sim) each variant first runs a few batches under
// the hazard engine (report mode): the loops by hand are the fixed ones, so 0 is expected.
//
// pipeline_compare_bench [--backend sim|cuda] [--configs copy_bound,sm_bound,balanced] [--steps N]
//                        [--reps R] [--warmup W] [--alone-steps A] [--depth D] [--check]
//                        [--check-steps C] [--json] [--json-out FILE]
// Exit 0: every variant ran; 2: bad options; 3: a failure.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "args.hpp"
#include "compare_variants.hpp"
#include "streamsafe/error.hpp"

namespace {

using namespace streamsafe;
using streamsafe::bench::repetition;

const std::vector<cli::option_spec> option_specs = {
    {"backend", true, "sim (default: no GPU needed) or cuda"},
    {"configs", true, "comma-separated configs (default copy_bound,sm_bound,balanced)"},
    {"steps", true, "batches per measured run (default 200 on cuda, 8 on sim)"},
    {"reps", true, "measured runs per variant, interleaved (default 5)"},
    {"warmup", true, "batches run before measuring, per variant (default 20 on cuda, 2 on sim)"},
    {"alone-steps", true, "batches of the pipeline run stage by stage for the bound (default 10 on cuda, 2 on sim)"},
    {"check", false, "cuda: also run each variant under the hazard engine (report mode) first; sim always does"},
    {"check-steps", true, "batches per variant under the hazard engine (default 4)"},
    {"depth", true, "the pipeline's ring slots and the loader's pinned batches (default 2)"},
    {"json", false, "print one JSON array (an object per config and variant, every repetition) instead of the table"},
    {"json-out", true, "also write that JSON array to this file (the table is still printed)"},
    {"help", false, "print this help"},
};

struct options {
  backend_kind backend = backend_kind::sim;
  std::vector<std::string> configs;
  std::size_t steps = 0;
  std::size_t reps = 0;
  std::size_t warmup = 0;
  std::size_t alone_steps = 0;
  std::size_t depth = 2;
  bool check = false;
  std::size_t check_steps = 0;
  bool json = false;
  std::optional<std::string> json_out;
};

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

options options_of(const cli::args& parsed) {
  options o;
  const std::string backend = parsed.value_or("backend", "sim");
  if (backend != "sim" && backend != "cuda") throw usage_error("pipeline_compare_bench: --backend must be sim or cuda, not '" + backend + "'");
  o.backend = backend == "cuda" ? backend_kind::cuda : backend_kind::sim;
  const bool cuda = o.backend == backend_kind::cuda;
  o.configs = split(parsed.value_or("configs", "copy_bound,sm_bound,balanced"));
  o.steps = parsed.unsigned_or("steps", cuda ? 200 : 8);
  o.reps = parsed.unsigned_or("reps", 5);
  o.warmup = parsed.unsigned_or("warmup", cuda ? 20 : 2);
  o.alone_steps = parsed.unsigned_or("alone-steps", cuda ? 10 : 2);
  o.depth = parsed.unsigned_or("depth", 2);
  o.check = parsed.has("check") || !cuda;
  o.check_steps = parsed.unsigned_or("check-steps", 4);
  o.json = parsed.has("json");
  o.json_out = parsed.value("json-out");
  if (o.steps < 2) throw usage_error("pipeline_compare_bench: --steps must be at least 2 (the steady step spans the batches after the first)");
  if (o.reps == 0 || o.alone_steps == 0 || o.depth == 0) throw usage_error("pipeline_compare_bench: --reps, --alone-steps and --depth must be at least 1");
  if (o.configs.empty()) throw usage_error("pipeline_compare_bench: --configs names no config");
  for (const std::string& name : o.configs) (void)demo::training_config_for(name, o.backend);  // names checked first
  return o;
}

// The sim device runs each stream on its own thread, so the streams overlap as on a GPU.
Device device_for(backend_kind backend) {
  if (backend == backend_kind::cuda) return Device::cuda(0);
  return Device::sim(sim_options{.memory_capacity = std::size_t{2} << 30, .mode = sim_mode::threaded});
}

struct variant_result {
  std::string name;
  std::vector<repetition> reps;
  std::optional<std::size_t> hazards;  // when checked
};

struct config_result {
  demo::training_config config;
  std::string device;
  bench::config_bound bound;
  std::vector<variant_result> variants;
};

config_result run_config(const options& o, const std::string& name) {
  const demo::training_config config = demo::training_config_for(name, o.backend);
  bench::bench_device shared(device_for(o.backend));
  config_result result{.config = config, .device = shared.device.name(), .bound = {}, .variants = {}};
  // Checked first, on allocators of their own: the engine's cost never enters the figures.
  const std::vector<std::size_t> hazards =
      o.check ? bench::check_hazards(shared.device, config, o.depth, o.check_steps) : std::vector<std::size_t>{};
  result.bound = bench::measure_bound(shared, config, o.depth, o.alone_steps);
  std::vector<std::unique_ptr<bench::variant>> variants = bench::make_variants(shared, config, o.depth);
  for (std::size_t k = 0; k < variants.size(); ++k) {
    variants[k]->warm_up(o.warmup);
    result.variants.push_back({variants[k]->name(), {}, o.check ? std::optional(hazards[k]) : std::nullopt});
  }
  for (std::size_t r = 0; r < o.reps; ++r) {
    for (std::size_t k = 0; k < variants.size(); ++k) result.variants[k].reps.push_back(variants[k]->measure(o.steps));
  }
  return result;
}

struct spread {
  double median = 0;
  double min = 0;
  double max = 0;
};

template <typename field>
spread spread_of(const std::vector<repetition>& reps, field figure) {
  std::vector<double> values;
  for (const repetition& r : reps) values.push_back(static_cast<double>(figure(r)));
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const double median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return {median, values.front(), values.back()};
}

double ratio(double step_us, double bound_us) { return bound_us > 0 ? step_us / bound_us : 0; }

void print_table(const options& o, const config_result& c) {
  const pipeline::bound_report& b = c.bound.bound;
  std::printf("%s on %s: %zu images of %zux%zu, %zu layer(s) of %zu; %zu steps x %zu reps, depth %zu\n", c.config.name.c_str(),
              c.device.c_str(), c.config.shape.images, c.config.shape.height, c.config.shape.width, c.config.layers,
              c.config.hidden, o.steps, o.reps, o.depth);
  std::printf("bound %.1f us (%s; H2D %.1f, SMs %.1f; stages alone:", b.bound_us, std::string(pipeline::resource_name(b.limit)).c_str(),
              b.h2d_us, b.sm_us);
  for (const pipeline::stage_time& s : c.bound.stages) std::printf(" %s %.1f", s.name.c_str(), s.alone_us);
  std::printf(")\n%-13s %10s %21s %10s %9s %7s %6s %8s %8s\n", "variant", "step us", "min-max us", "step/bound", "H2D GB/s",
              "allocs", "syncs", "blocked", "hazards");
  for (const variant_result& v : c.variants) {
    const spread step = spread_of(v.reps, [](const repetition& r) { return r.step_us; });
    const spread h2d = spread_of(v.reps, [](const repetition& r) { return r.h2d_gbps; });
    const spread allocs = spread_of(v.reps, [](const repetition& r) { return r.loop_allocations; });
    const spread syncs = spread_of(v.reps, [](const repetition& r) { return r.loop_host_syncs; });
    const spread blocked = spread_of(v.reps, [](const repetition& r) { return r.blocked_waits; });
    const std::string range = std::to_string(static_cast<long long>(step.min)) + "-" + std::to_string(static_cast<long long>(step.max));
    const std::string hazards = v.hazards ? std::to_string(*v.hazards) : "-";
    std::printf("%-13s %10.1f %21s %10.3f %9.2f %7.0f %6.0f %8.0f %8s\n", v.name.c_str(), step.median, range.c_str(),
                ratio(step.median, b.bound_us), h2d.median, allocs.median, syncs.median, blocked.median, hazards.c_str());
  }
  if (o.backend == backend_kind::sim) std::printf("(sim: host times, sim kernels are host loops; not performance figures)\n");
  std::printf("\n");
}

void print_json_object(std::ostream& out, const options& o, const config_result& c, const variant_result& v) {
  const pipeline::bound_report& b = c.bound.bound;
  const spread step = spread_of(v.reps, [](const repetition& r) { return r.step_us; });
  out << "{\"backend\":\"" << (o.backend == backend_kind::cuda ? "cuda" : "sim") << "\",\"device\":\"" << c.device
      << "\",\"config\":\"" << c.config.name << "\",\"variant\":\"" << v.name << "\",\"steps\":" << o.steps
      << ",\"reps\":" << o.reps << ",\"warmup\":" << o.warmup << ",\"depth\":" << o.depth
      << ",\"batch_bytes\":" << c.config.batch_bytes() << ",\"bound_us\":" << b.bound_us << ",\"bound_resource\":\""
      << pipeline::resource_name(b.limit) << "\",\"h2d_us\":" << b.h2d_us << ",\"sm_us\":" << b.sm_us << ",\"stages\":[";
  for (std::size_t k = 0; k < c.bound.stages.size(); ++k) {
    const pipeline::stage_time& s = c.bound.stages[k];
    out << (k == 0 ? "" : ",") << "{\"name\":\"" << s.name << "\",\"resource\":\"" << pipeline::resource_name(s.resource)
        << "\",\"alone_us\":" << s.alone_us << "}";
  }
  out << "],\"median_step_us\":" << step.median << ",\"min_step_us\":" << step.min << ",\"max_step_us\":" << step.max
      << ",\"step_over_bound\":" << ratio(step.median, b.bound_us) << ",\"checked\":" << (v.hazards ? "true" : "false")
      << ",\"hazards\":" << (v.hazards ? std::to_string(*v.hazards) : "null") << ",\"repetitions\":[";
  for (std::size_t k = 0; k < v.reps.size(); ++k) {
    const repetition& r = v.reps[k];
    out << (k == 0 ? "" : ",") << "{\"step_us\":" << r.step_us << ",\"wall_step_us\":" << r.wall_step_us
        << ",\"h2d_gbps\":" << r.h2d_gbps << ",\"loop_allocations\":" << r.loop_allocations << ",\"loop_frees\":" << r.loop_frees
        << ",\"loop_host_syncs\":" << r.loop_host_syncs << ",\"blocked_waits\":" << r.blocked_waits
        << ",\"last_loss\":" << r.last_loss << "}";
  }
  out << "]}";
}

std::string json_of(const options& o, const std::vector<config_result>& results) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(3);
  out << "[";
  const char* separator = "\n";
  for (const config_result& c : results) {
    for (const variant_result& v : c.variants) {
      out << separator;
      print_json_object(out, o, c, v);
      separator = ",\n";
    }
  }
  out << "\n]\n";
  return out.str();
}

int run(const std::vector<std::string>& argv) {
  const cli::args parsed("pipeline_compare_bench", argv, option_specs);
  if (parsed.has("help")) {
    std::cout << cli::usage("pipeline_compare_bench",
                            "[--backend sim|cuda] [--configs a,b] [--steps N] [--reps R] [--warmup W] [--alone-steps A] "
                            "[--depth D] [--check] [--check-steps C] [--json] [--json-out FILE]",
                            option_specs);
    return 0;
  }
  const options o = options_of(parsed);
  std::vector<config_result> results;
  for (const std::string& name : o.configs) {
    results.push_back(run_config(o, name));
    if (!o.json) print_table(o, results.back());
  }
  const std::string json = json_of(o, results);
  if (o.json) std::cout << json;
  if (o.json_out) {
    std::ofstream file(*o.json_out);
    file << json;
    if (!file) throw error("pipeline_compare_bench: cannot write --json-out " + *o.json_out);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const usage_error& e) {
    std::cerr << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "pipeline_compare_bench: " << e.what() << '\n';
    return 3;
  }
}
