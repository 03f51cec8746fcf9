// Demo section 5: the four-stream training loop people write by hand (one stream per stage, one
// event per hand-off, record_stream on what each stream produced, the optimizer on the default
// stream) run under the hazard engine, which finds its races; then the same step on the stage
// pipeline, where every hand-off is the pipeline's: no hazards, and its timeline.
#include <optional>
#include <ostream>
#include <sstream>

#include "demo_sections.hpp"
#include "hand_loops.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/hazard/report_text.hpp"
#include "streamsafe/hazard/tracked_allocator.hpp"
#include "streamsafe/hazard/tracker.hpp"
#include "streamsafe/monitor/chrome_trace.hpp"
#include "streamsafe/monitor/collector.hpp"
#include "streamsafe/pipeline/pipeline.hpp"
#include "training_pipeline.hpp"

namespace streamsafe::cli {

namespace {

constexpr std::size_t handmade_steps = 3;
constexpr std::size_t pipeline_steps = 6;
constexpr std::size_t pipeline_depth = 2;
constexpr const char* config_name = "balanced";

std::vector<hazard::hazard> wrong_ones(const hazard::tracker& hazards) {
  std::vector<hazard::hazard> found;
  for (const hazard::hazard& h : hazards.hazards()) {
    if (!hazard::is_informational(h.kind)) found.push_back(h);
  }
  return found;
}

std::vector<hazard::hazard> run_handmade(Device device, const demo::training_config& config) {
  caching_allocator allocator(device);
  hazard::tracker hazards(device, hazard::policy::report);
  hazard::tracked_allocator memory(allocator, hazards);
  demo::loop_ops ops(hazards, memory);
  // The pipeline's model with one layer; the loop exactly as written, one pinned batch reused.
  demo::training_config one_layer = config;
  one_layer.layers = 1;
  {
    demo::four_stream_loop loop(device, ops, one_layer, {.fixed = false, .allreduce = true, .staging_slots = 1});
    for (std::size_t batch = 0; batch < handmade_steps; ++batch) loop.step(batch);
  }
  return wrong_ones(hazards);
}

struct pipeline_outcome {
  std::size_t hazards = 0;
  std::optional<std::filesystem::path> trace;  // empty when the collector could not attach
  std::string collector_status;
};

pipeline_outcome run_on_pipeline(const demo_setup& setup, const demo::training_config& config) {
  Device device = overlapping_device(setup);
  caching_allocator allocator(device);
  hazard::tracker hazards(device, hazard::policy::report);
  demo::training_step training(config, device.backend());
  monitor::collector collect(device);
  pipeline_outcome outcome;
  {
    pipeline::pipeline checked(device, allocator, training.spec(pipeline_depth), &hazards);
    if (collect.status() == monitor::collector_status::inactive) {
      outcome.collector_status = collect.status_message();
      (void)checked.run(pipeline_steps);
    } else {
      const monitor::trace timeline = collect.capture_window([&] { (void)checked.run(pipeline_steps); });
      std::ostringstream chrome;
      monitor::write_chrome_trace(chrome, timeline);
      std::filesystem::create_directories(setup.output_dir);
      outcome.trace = write_demo_file(setup.output_dir / "streamsafe-demo-pipeline-trace.json", chrome.str());
    }
  }
  outcome.hazards = wrong_ones(hazards).size();
  return outcome;
}

void print_story(std::ostream& out, const demo::training_config& config, const std::vector<hazard::hazard>& handmade,
                 const pipeline_outcome& piped) {
  out << "5. A training loop: " << config.shape.images << " images of " << config.shape.height << "x" << config.shape.width
      << ", hand-made on four streams (data, preprocess, compute, sync; the optimizer on the default stream),\n"
      << "   E1-E3 recorded again every step, record_stream on what each stream produced; " << handmade_steps
      << " steps under STREAMSAFE_HAZARDS=report: " << handmade.size() << " distinct hazards\n\n";
  for (const hazard::hazard& found : handmade) out << hazard::describe(found) << '\n';
  out << "   The same step on streamsafe::pipeline (h2d, preprocess, compute, sync, step; depth " << pipeline_depth << ", "
      << pipeline_steps << " steps, the pipeline makes every hand-off): " << piped.hazards << " hazards\n";
  if (piped.trace) {
    out << "   Its timeline (open in Perfetto): "
        << std::filesystem::absolute(*piped.trace).lexically_normal().string() << "\n\n";
  } else {
    out << "   Its timeline: not collected. " << piped.collector_status << "\n\n";
  }
}

}  // namespace

std::vector<demo_figure> run_pipeline_demo(const demo_setup& setup) {
  const demo::training_config config = demo::training_config_for(config_name, setup.device.backend());
  const std::vector<hazard::hazard> handmade = run_handmade(setup.device, config);
  const pipeline_outcome piped = run_on_pipeline(setup, config);
  if (setup.text != nullptr) print_story(*setup.text, config, handmade, piped);
  return {{"handmade_loop_hazards", std::to_string(handmade.size())},
          {"pipeline_hazards", std::to_string(piped.hazards)},
          {"pipeline_timeline_collected", piped.trace ? "true" : "false"}};
}

}  // namespace streamsafe::cli
