// Demo section 5: the four-stream training loop people write by hand (one stream per stage, one
// event per hand-off, record_stream on what each stream produced, the optimizer on the default
// stream) run under the hazard engine, which finds its races; then the same step on the stage
// pipeline, where every hand-off is the pipeline's: no hazards, and its timeline.
#include <cstring>
#include <optional>
#include <ostream>
#include <sstream>

#include "demo_sections.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/hazard/report_text.hpp"
#include "streamsafe/hazard/tracked_allocator.hpp"
#include "streamsafe/hazard/tracker.hpp"
#include "streamsafe/monitor/chrome_trace.hpp"
#include "streamsafe/monitor/collector.hpp"
#include "streamsafe/pipeline/pipeline.hpp"
#include "streamsafe/stream.hpp"
#include "training_pipeline.hpp"

namespace streamsafe::cli {

namespace {

constexpr std::size_t handmade_steps = 3;
constexpr std::size_t pipeline_steps = 6;
constexpr std::size_t pipeline_depth = 2;
constexpr const char* config_name = "balanced";

std::size_t floats(std::size_t count) { return count * sizeof(float); }

/// The hand-made loop's model: one fully connected layer over the pooled image (the pipeline's
/// model with one layer), its weights and gradients allocated once, as a framework's parameters.
class handmade_loop {
 public:
  handmade_loop(Device& device, hazard::tracker& hazards, hazard::tracked_allocator& memory,
                const demo::training_config& config)
      : device_(device), hazards_(hazards), memory_(memory), shape_(config.shape), hidden_(config.hidden),
        blas_(device.backend() == backend_kind::cuda), e1_(device), e2_(device), e3_(device) {
    staging_ = static_cast<std::uint8_t*>(device.allocate_pinned(shape_.pixels()));
    weights_ = static_cast<float*>(memory_.allocate(floats(weight_count()), device.default_stream()));
    grads_ = static_cast<float*>(memory_.allocate(floats(weight_count()), compute_));
    hazards_.on(device.default_stream()).writes(weights_, floats(weight_count())).launch(demo::init_kernel(weights_, weight_count()));
  }
  ~handmade_loop() {
    device_.synchronize();
    memory_.deallocate(grads_);
    memory_.deallocate(weights_);
    device_.deallocate_pinned(staging_);
  }
  handmade_loop(const handmade_loop&) = delete;
  handmade_loop& operator=(const handmade_loop&) = delete;

  void step(std::size_t batch) {
    // The loader fills the pinned batch: the host runs ahead of the last step's copy.
    hazards_.host_writes(staging_, shape_.pixels());
    std::memset(staging_, static_cast<int>(batch & 0xff), shape_.pixels());
    auto* images = static_cast<std::uint8_t*>(memory_.allocate(shape_.pixels(), data_));
    hazards_.on(data_).copy(images, staging_, shape_.pixels());
    memory_.record_stream(images, data_);
    e1_.record(data_);

    preprocess_.wait(e1_);
    auto* pixels = static_cast<float*>(memory_.allocate(floats(shape_.pixels()), preprocess_));
    hazards_.on(preprocess_).reads(images, shape_.pixels()).writes(pixels, floats(shape_.pixels()))
        .launch(demo::preprocess_kernel(images, pixels, shape_));
    memory_.record_stream(pixels, preprocess_);
    e2_.record(preprocess_);

    compute_.wait(e2_);
    auto* activations = static_cast<float*>(memory_.allocate(floats(activation_count()), compute_));
    forward_backward(pixels, activations);
    memory_.record_stream(grads_, compute_);
    e3_.record(compute_);

    sync_.wait(e3_);
    // One rank's all-reduce: the sum is the gradient itself, read and written in place as NCCL's.
    hazards_.on(sync_).reads(grads_, grad_bytes()).writes(grads_, grad_bytes())
        .launch(demo::sgd_kernel(grads_, grads_, weight_count(), 0.0f));
    // "Safe because the waits above order the gradients": they do not order the default stream.
    hazards_.on(device_.default_stream()).reads(grads_, grad_bytes()).reads(weights_, grad_bytes())
        .writes(weights_, grad_bytes()).launch(demo::sgd_kernel(weights_, grads_, weight_count(), 1e-3f));

    // The step's tensors go out of scope, as in Python.
    memory_.deallocate(activations);
    memory_.deallocate(pixels);
    memory_.deallocate(images);
  }

 private:
  [[nodiscard]] std::size_t weight_count() const { return hidden_ * hidden_; }
  [[nodiscard]] std::size_t grad_bytes() const { return floats(weight_count()); }
  // pooled features, output and its delta, then the loss
  [[nodiscard]] std::size_t activation_count() const { return 3 * shape_.images * hidden_ + 1; }

  void forward_backward(const float* pixels, float* activations) {
    const std::size_t rows = shape_.images;
    const std::size_t plane = rows * hidden_;
    float* features = activations;
    float* out = activations + plane;
    float* delta = activations + 2 * plane;
    float* loss = activations + 3 * plane;
    const std::size_t act_bytes = floats(activation_count());
    hazards_.on(compute_).reads(pixels, floats(shape_.pixels())).writes(activations, act_bytes)
        .launch(demo::pool_kernel(pixels, features, shape_, hidden_));
    hazards_.on(compute_).reads(activations, act_bytes).reads(weights_, grad_bytes()).writes(activations, act_bytes)
        .launch(demo::gemm_kernel(features, weights_, out, {rows, hidden_, hidden_}, blas_.get()));
    hazards_.on(compute_).reads(activations, act_bytes).writes(activations, act_bytes)
        .launch(demo::loss_kernel(out, delta, loss, plane, rows));
    hazards_.on(compute_).reads(activations, act_bytes).writes(grads_, grad_bytes())
        .launch(demo::gemm_kernel(features, delta, grads_, {hidden_, hidden_, rows, true, false}, blas_.get()));
  }

  Device& device_;
  hazard::tracker& hazards_;
  hazard::tracked_allocator& memory_;
  demo::image_shape shape_;
  std::size_t hidden_;
  demo::blas_handle blas_;
  Stream data_{device_, {.name = "data"}};
  Stream preprocess_{device_, {.name = "preprocess"}};
  Stream compute_{device_, {.name = "compute"}};
  Stream sync_{device_, {.name = "sync"}};
  Event e1_, e2_, e3_;  // created once, recorded again every step
  std::uint8_t* staging_ = nullptr;
  float* weights_ = nullptr;
  float* grads_ = nullptr;
};

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
  {
    handmade_loop loop(device, hazards, memory, config);
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
  out << "   The same step on streamsafe::pipeline (h2d, preprocess, compute, step; depth " << pipeline_depth << ", "
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
