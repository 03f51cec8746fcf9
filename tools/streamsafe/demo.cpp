// `streamsafe demo`: the main job. Shows the multi-stream bugs of GUIDE.md section 1 caught and
// fixed, on a GPU when one is present and on the sim backend otherwise.
#include <iostream>

#include "args.hpp"
#include "commands.hpp"
#include "demo_sections.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe::cli {

namespace {

const std::vector<option_spec> demo_options = {
    {"backend", true, "sim or cuda (default: cuda when a GPU is present, else sim)"},
    {"trials", true, "trials per case (default 20)"},
    {"seed", true, "seed of the sim scheduler and of the trial values (default 1)"},
    {"json", false, "print one JSON object instead of the story"},
    {"out", true, "folder for the timelines (Chrome traces, an HTML report; default: .)"},
    {"help", false, "show this help"},
};

Device pick_device(const args& parsed, std::uint64_t seed) {
  const auto backend = parsed.value_or("backend", "");
  const sim_options sim{.memory_capacity = std::size_t{256} << 20, .seed = seed};
  if (backend.empty()) return Device::best(sim);
  if (backend == "sim") return Device::sim(sim);
  if (backend == "cuda") return Device::cuda(0);
  throw usage_error("streamsafe demo: --backend must be sim or cuda, got '" + backend + "'");
}

void print_json(const Device& device, std::uint64_t trials, std::uint64_t seed,
                const std::vector<demo_figure>& figures) {
  std::cout << "{\"backend\":\"" << to_string(device.backend()) << "\",\"device\":\"" << device.name()
            << "\",\"trials\":" << trials << ",\"seed\":" << seed;
  for (const auto& [key, value] : figures) std::cout << ",\"" << key << "\":" << value;
  std::cout << "}\n";
}

}  // namespace

int run_demo(const std::vector<std::string>& argv) {
  args parsed("demo", argv, demo_options);
  if (parsed.has("help")) {
    std::cout << usage("demo", "[--backend sim|cuda] [--trials N] [--seed S] [--json] [--out DIR]", demo_options);
    return 0;
  }
  const auto seed = parsed.unsigned_or("seed", 1);
  demo_setup setup{.device = pick_device(parsed, seed),
                   .trials = parsed.unsigned_or("trials", 20),
                   .seed = seed,
                   .output_dir = parsed.value_or("out", ".")};
  if (setup.trials == 0) throw usage_error("streamsafe demo: --trials must be at least 1");
  const bool json = parsed.has("json");
  if (!json) {
    setup.text = &std::cout;
    std::cout << "streamsafe demo on " << setup.device.name() << ", " << setup.trials << " trials per case\n\n";
  }
  std::vector<demo_figure> figures;
  for (auto* section : {run_ordering_demo, run_lifetime_demo, run_hazard_demo, run_timeline_demo, run_pipeline_demo}) {
    auto produced = section(setup);
    figures.insert(figures.end(), produced.begin(), produced.end());
  }
  if (json) print_json(setup.device, setup.trials, seed, figures);
  return 0;
}

}  // namespace streamsafe::cli
