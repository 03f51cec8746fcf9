#include "training_pipeline.hpp"

#include <algorithm>
#include <cstring>

#include "streamsafe/device.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/pipeline/collectives/nccl_communicator.hpp"
#include "streamsafe/pipeline/collectives/sim_communicator.hpp"

namespace streamsafe::demo {

namespace {

using pipeline::buffer_scope;
using pipeline::buffer_spec;
using pipeline::memory_place;
using pipeline::stage_context;
using pipeline::stage_resource;
using pipeline::stage_spec;

struct named_config {
  const char* name;
  training_config cuda;
  training_config sim;
};

// cuda: copy_bound moves 1024 224x224 images through a small model, sm_bound 256 through four
// 4096-wide layers, balanced 256 through four 2048-wide layers, all with PyTorch DDP's 25 MiB
// bucket cap. sim: the same shapes, small, with a cap of one layer's gradients so that the sync
// stage has a bucket per layer to overlap.
constexpr std::size_t sim_layer_cap(std::size_t hidden) { return hidden * hidden * sizeof(float); }
const named_config configs[] = {
    {"copy_bound", {"copy_bound", {1024, 224, 224}, 1024, 1}, {"copy_bound", {64, 32, 32}, 16, 1, sim_layer_cap(16)}},
    {"sm_bound", {"sm_bound", {256, 224, 224}, 4096, 4}, {"sm_bound", {8, 32, 32}, 96, 4, sim_layer_cap(96)}},
    {"balanced", {"balanced", {256, 224, 224}, 2048, 4}, {"balanced", {16, 32, 32}, 64, 2, sim_layer_cap(64)}},
};

std::size_t floats(std::size_t count) { return count * sizeof(float); }

// The first lap fills whole slots; later batches rewrite each image's first row only (with the
// batch index), so the host stays off the critical path as a many-threaded real loader would.
void fill_images(std::size_t batch, pipeline::byte_span staging, const image_shape& shape, std::size_t depth) {
  auto* bytes = reinterpret_cast<std::uint8_t*>(staging.data());
  if (batch < depth) {
    for (std::size_t i = 0; i < staging.size(); ++i) bytes[i] = static_cast<std::uint8_t>((i * 31 + batch) & 0xff);
    return;
  }
  const std::size_t row = shape.width * 3;
  for (std::size_t n = 0; n < shape.images; ++n) std::memset(bytes + n * shape.per_image(), static_cast<int>(batch & 0xff), row);
}

// Parameter order: layer 0's weights first. Backward produces them last to first.
std::vector<collectives::gradient> layer_gradients(const training_config& config) {
  std::vector<collectives::gradient> grads;
  for (std::size_t l = 0; l < config.layers; ++l) {
    grads.push_back({"fc" + std::to_string(l) + ".weight", floats(config.hidden * config.hidden)});
  }
  return grads;
}

std::unique_ptr<collectives::communicator> one_rank_communicator(backend_kind backend) {
  if (backend == backend_kind::cuda) {
    return std::make_unique<collectives::nccl_communicator>(Device::cuda(0), 0, 1, collectives::nccl_unique_id::create());
  }
  return std::make_unique<collectives::sim_communicator>(std::make_shared<collectives::sim_group>(1), 0);
}

}  // namespace

training_config training_config_for(std::string_view name, backend_kind backend) {
  for (const named_config& config : configs) {
    if (name == config.name) return backend == backend_kind::cuda ? config.cuda : config.sim;
  }
  throw usage_error("streamsafe pipeline: --config must be copy_bound, sm_bound or balanced, not '" + std::string(name) + "'");
}

training_step::training_step(training_config config, backend_kind backend, collectives::communicator* comm)
    : config_(std::move(config)),
      blas_(backend == backend_kind::cuda),
      plan_(layer_gradients(config_), config_.bucket_cap),
      own_comm_(comm == nullptr ? one_rank_communicator(backend) : nullptr),
      comm_(comm == nullptr ? own_comm_.get() : comm),
      sync_{.name = "sync", .gradients = "grads", .plan = &plan_, .comm = comm_, .stream = {}} {}

pipeline::pipeline_spec training_step::spec(std::size_t depth) {
  const image_shape shape = config_.shape;
  pipeline::pipeline_spec spec;
  spec.depth = depth;
  spec.staging = buffer_spec{.name = "staging", .bytes = shape.pixels(), .place = memory_place::pinned};
  spec.producer = [shape, depth](std::size_t batch, pipeline::byte_span staging) { fill_images(batch, staging, shape, depth); };
  spec.on_result = [this](const pipeline::result_view& result) {
    last_loss_ = result.buffer_as<float>("loss_host")[0];
    if (progress_) progress_(result.batch());
  };
  spec.stages.push_back({.name = "h2d",
                         .inputs = {"staging"},
                         .outputs = {{.name = "images", .bytes = shape.pixels()}},
                         .body = [](stage_context& ctx) { ctx.copy("images", "staging"); },
                         .resource = stage_resource::copy_h2d});
  spec.stages.push_back({.name = "preprocess",
                         .inputs = {"images"},
                         .outputs = {{.name = "pixels", .bytes = floats(shape.pixels())}},
                         .body =
                             [shape](stage_context& ctx) {
                               const auto in = ctx.buffer_as<std::uint8_t>("images");
                               ctx.launch(preprocess_kernel(in.data(), ctx.buffer_as<float>("pixels").data(), shape),
                                          {ctx.buffer("images")}, {ctx.buffer("pixels")});
                             }});
  spec.stages.push_back(compute_stage());
  spec.stages.push_back(collectives::sync_stage(sync_));
  spec.stages.push_back(step_stage());
  return spec;
}

stage_spec training_step::compute_stage() {
  const std::size_t rows = config_.shape.images;
  const std::size_t h = config_.hidden;
  const std::size_t layers = config_.layers;
  const std::size_t activations = (layers + 1) * rows * h;
  auto body = [this, rows, h, layers](stage_context& ctx) {
    float* act = ctx.buffer_as<float>("activations").data();
    float* delta = ctx.buffer_as<float>("deltas").data();
    const pipeline::byte_span grad_bytes = ctx.buffer("grads");
    const float* weights = ctx.buffer_as<float>("weights").data();
    const auto a = [&](std::size_t l) { return act + l * rows * h; };
    const auto d = [&](std::size_t l) { return delta + l * rows * h; };
    // Weights and gradients share the plan's layout: layer l at the plan's offset of gradient l.
    const auto w = [&](std::size_t l) { return weights + plan_.offset_of(l) / sizeof(float); };
    const auto grad = [&](std::size_t l) { return grad_bytes.subspan(plan_.offset_of(l), floats(h * h)); };
    const pipeline::const_byte_span act_bytes = ctx.buffer("activations");
    const pipeline::const_byte_span delta_bytes = ctx.buffer("deltas");
    ctx.launch(pool_kernel(ctx.buffer_as<float>("pixels").data(), a(0), config_.shape, h), {ctx.buffer("pixels")}, {act_bytes});
    for (std::size_t l = 0; l < layers; ++l) {
      ctx.launch(gemm_kernel(a(l), w(l), a(l + 1), {rows, h, h}, blas_.get()), {act_bytes, ctx.buffer("weights")}, {act_bytes});
      ctx.launch(relu_kernel(a(l + 1), rows * h), {act_bytes}, {act_bytes});
    }
    ctx.launch(loss_kernel(a(layers), d(layers), ctx.buffer_as<float>("loss").data(), rows * h, rows), {act_bytes},
               {delta_bytes, ctx.buffer("loss")});
    for (std::size_t l = layers; l-- > 0;) {
      ctx.launch(gemm_kernel(a(l), d(l + 1), reinterpret_cast<float*>(grad(l).data()), {h, h, rows, true, false}, blas_.get()),
                 {act_bytes, delta_bytes}, {grad(l)});
      const collectives::bucket& bucket = plan_.bucket_of(l);
      if (bucket.gradients.back() == l) collectives::publish_bucket(ctx, sync_, bucket.id);
      if (l == 0) continue;
      ctx.launch(gemm_kernel(d(l + 1), w(l), d(l), {rows, h, h, false, true}, blas_.get()),
                 {delta_bytes, ctx.buffer("weights")}, {delta_bytes});
      ctx.launch(relu_backward_kernel(d(l), a(l), rows * h), {act_bytes, delta_bytes}, {delta_bytes});
    }
    ctx.copy("loss_host", "loss");
  };
  return {.name = "compute",
          .inputs = {"pixels", "weights"},
          .outputs = {{.name = "activations", .bytes = floats(activations)},
                      {.name = "deltas", .bytes = floats(activations)},
                      {.name = "grads", .bytes = plan_.total_bytes()},
                      {.name = "loss", .bytes = floats(1)},
                      {.name = "loss_host", .bytes = floats(1), .place = memory_place::pinned}},
          .publishes = collectives::bucket_signals(sync_),
          .body = body};
}

// The gradients are the sum over the ranks: the rate is divided by their number (their mean).
stage_spec training_step::step_stage() {
  const std::size_t count = plan_.total_bytes() / sizeof(float);
  const float rate = 1e-3f / static_cast<float>(comm_->size());
  return {.name = "step",
          .inputs = {"grads"},
          .outputs = {{.name = "weights", .bytes = floats(count), .scope = buffer_scope::shared}},
          .body =
              [count, rate](stage_context& ctx) {
                ctx.launch(sgd_kernel(ctx.buffer_as<float>("weights").data(), ctx.buffer_as<float>("grads").data(), count, rate),
                           {ctx.buffer("grads"), ctx.buffer("weights")}, {ctx.buffer("weights")});
              },
          .initialize =
              [count](stage_context& ctx) {
                ctx.launch(init_kernel(ctx.buffer_as<float>("weights").data(), count), {}, {ctx.buffer("weights")});
              },
          .step = true};
}

}  // namespace streamsafe::demo
