#include "ring_pipeline.hpp"

#include <algorithm>
#include <stdexcept>

#include "demo_kernels.hpp"
#include "streamsafe/config.hpp"

namespace streamsafe::testing {

namespace {

using pipeline::buffer_spec;
using pipeline::memory_place;
using pipeline::stage_context;
using pipeline::stage_resource;
using pipeline::stage_spec;

// Doubles raw into scaled; on sim it also notes which batch's bytes it read.
kernel scale_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count, std::uint32_t* seen) {
  kernel work = demo::double_kernel(in, out, count);
  work.name = "scale";
  work.sim = [=] {
    *seen = uniform_value(in, count);
    std::transform(in, in + count, out, [](std::uint32_t v) { return 2 * v; });
  };
  return work;
}

stage_spec upload_stage(const ring_options& options, std::size_t bytes) {
  return {.name = "upload",
          .inputs = {"staging"},
          .outputs = {buffer_spec{.name = "raw", .bytes = bytes}},
          .body = [](stage_context& ctx) { ctx.copy("raw", "staging"); },
          .resource = stage_resource::copy_h2d,
          .stream = {.pacing = options.upload}};
}

stage_spec scale_stage(const ring_options& options, std::size_t bytes, ring_observations& seen) {
  return {.name = "scale",
          .inputs = {"raw"},
          .outputs = {buffer_spec{.name = "scaled", .bytes = bytes}},
          .body =
              [&options, &seen](stage_context& ctx) {
                if (options.scale_throws_at == ctx.batch()) throw std::runtime_error("scale failed on purpose");
                const auto raw = ctx.buffer_as<std::uint32_t>("raw");
                const auto scaled = ctx.buffer_as<std::uint32_t>("scaled");
                ctx.launch(scale_kernel(raw.data(), scaled.data(), raw.size(), &seen.seen[ctx.batch()]),
                           {ctx.buffer("raw")}, {ctx.buffer("scaled")});
              },
          .stream = {.pacing = options.scale}};
}

stage_spec download_stage(const ring_options& options, std::size_t bytes) {
  return {.name = "download",
          .inputs = {"scaled"},
          .outputs = {buffer_spec{.name = "result", .bytes = bytes, .place = memory_place::pinned}},
          .body = [](stage_context& ctx) { ctx.copy("result", "scaled"); },
          .resource = stage_resource::copy_d2h,
          .stream = {.pacing = options.download}};
}

}  // namespace

void add_staging(pipeline::pipeline_spec& spec, std::size_t bytes, std::optional<std::size_t> throws_at) {
  spec.staging = buffer_spec{.name = "staging", .bytes = bytes, .place = memory_place::pinned};
  spec.producer = [throws_at](std::size_t batch, pipeline::byte_span staging) {
    if (throws_at == batch) throw std::runtime_error("producer failed on purpose");
    auto* values = reinterpret_cast<std::uint32_t*>(staging.data());
    std::fill(values, values + staging.size() / sizeof(std::uint32_t), batch_value(batch));
  };
}

std::uint32_t uniform_value(const std::uint32_t* values, std::size_t count) {
  const bool uniform = std::all_of(values, values + count, [&](std::uint32_t v) { return v == values[0]; });
  return uniform ? values[0] : mixed_values;
}

pipeline::pipeline_spec ring_spec(const ring_options& options, ring_observations& seen) {
  const std::size_t bytes = options.count * sizeof(std::uint32_t);
  pipeline::pipeline_spec spec;
  spec.depth = options.depth;
  spec.stages.push_back(upload_stage(options, bytes));
  spec.stages.push_back(scale_stage(options, bytes, seen));
  if (options.results) spec.stages.push_back(download_stage(options, bytes));
  add_staging(spec, bytes, options.producer_throws_at);
  spec.on_result = [&seen](const pipeline::result_view& result) {
    const auto values = result.buffer_as<std::uint32_t>("result");
    seen.results[result.batch()] = uniform_value(values.data(), values.size());
    seen.result_order.push_back(result.batch());
  };
  return spec;
}

}  // namespace streamsafe::testing

namespace streamsafe::testing {

namespace {

using pipeline::buffer_scope;
using pipeline::buffer_spec;
using pipeline::stage_context;
using pipeline::stage_spec;

// out = in + weights[0]; `seen` gets weights[0] (sim).
kernel add_weight_kernel(const std::uint32_t* in, const std::uint32_t* weights, std::uint32_t* out, std::size_t count,
                         std::uint32_t* seen) {
  kernel work{.name = "backward"};
  work.sim = [=] {
    if (seen != nullptr) *seen = weights[0];
    std::transform(in, in + count, out, [&](std::uint32_t v) { return v + weights[0]; });
  };
  return work;
}

// out = in; `seen` gets in's value (sim).
kernel reduce_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count, std::uint32_t* seen) {
  kernel work{.name = "all_reduce"};
  work.sim = [=] {
    if (seen != nullptr) *seen = uniform_value(in, count);
    std::copy(in, in + count, out);
  };
  return work;
}

kernel update_kernel(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* weights, std::size_t count,
                     std::uint32_t value, std::uint32_t* seen) {
  kernel work{.name = "sgd"};
  work.sim = [=] {
    const std::uint32_t ua = uniform_value(a, count);
    *seen = ua == uniform_value(b, count) ? ua : mixed_values;
    std::fill(weights, weights + count, value);
  };
  return work;
}

stage_spec compute_stage(const training_options& options, std::size_t bytes, training_observations& seen) {
  return {.name = "compute",
          .inputs = {"raw", "weights"},
          .outputs = {buffer_spec{.name = "grad0", .bytes = bytes}, buffer_spec{.name = "grad1", .bytes = bytes}},
          .publishes = {{.name = "grad0", .buffers = {"grad0"}}},
          .body =
              [&seen](stage_context& ctx) {
                const auto raw = ctx.buffer_as<std::uint32_t>("raw");
                const auto weights = ctx.buffer_as<std::uint32_t>("weights");
                for (const char* grad : {"grad0", "grad1"}) {
                  std::uint32_t* note = grad[4] == '0' ? &seen.weights[ctx.batch()] : nullptr;
                  ctx.launch(add_weight_kernel(raw.data(), weights.data(), ctx.buffer_as<std::uint32_t>(grad).data(),
                                               raw.size(), note),
                             {ctx.buffer("raw"), ctx.buffer("weights")}, {ctx.buffer(grad)});
                  if (grad[4] == '0') ctx.publish("grad0");
                }
              },
          .stream = {.pacing = options.compute}};
}

stage_spec sync_stage(std::size_t bytes, training_observations& seen) {
  return {.name = "sync",
          .inputs = {"grad1"},
          .outputs = {buffer_spec{.name = "reduced0", .bytes = bytes}, buffer_spec{.name = "reduced1", .bytes = bytes}},
          .waits_for = {"grad0"},
          .body =
              [&seen](stage_context& ctx) {
                ctx.wait_for("grad0");
                for (const char* grad : {"grad0", "grad1"}) {
                  const std::string reduced = std::string("reduced") + grad[4];
                  const auto in = ctx.buffer_as<std::uint32_t>(grad);
                  std::uint32_t* note = grad[4] == '0' ? &seen.grad0[ctx.batch()] : nullptr;
                  ctx.launch(reduce_kernel(in.data(), ctx.buffer_as<std::uint32_t>(reduced).data(), in.size(), note),
                             {ctx.buffer(grad)}, {ctx.buffer(reduced)});
                }
              },
          .resource = pipeline::stage_resource::network};
}

stage_spec step_stage(const training_options& options, std::size_t bytes, training_observations& seen) {
  return {.name = "step",
          .inputs = {"reduced0", "reduced1"},
          .outputs = {buffer_spec{.name = "weights", .bytes = bytes, .scope = buffer_scope::shared}},
          .body =
              [&seen](stage_context& ctx) {
                const auto a = ctx.buffer_as<std::uint32_t>("reduced0");
                const auto b = ctx.buffer_as<std::uint32_t>("reduced1");
                ctx.launch(update_kernel(a.data(), b.data(), ctx.buffer_as<std::uint32_t>("weights").data(), a.size(),
                                         batch_value(ctx.batch()), &seen.reduced[ctx.batch()]),
                           {ctx.buffer("reduced0"), ctx.buffer("reduced1")}, {ctx.buffer("weights")});
              },
          .initialize =
              [](stage_context& ctx) {
                const auto weights = ctx.buffer_as<std::uint32_t>("weights");
                ctx.launch(demo::fill_kernel(weights.data(), weights.size(), initial_weight), {}, {ctx.buffer("weights")});
              },
          .step = true,
          .stream = {.pacing = options.step}};
}

}  // namespace

pipeline::pipeline_spec training_spec(const training_options& options, training_observations& seen) {
  const std::size_t bytes = options.count * sizeof(std::uint32_t);
  pipeline::pipeline_spec spec;
  spec.depth = options.depth;
  spec.stages.push_back(upload_stage({}, bytes));
  spec.stages.push_back(compute_stage(options, bytes, seen));
  spec.stages.push_back(sync_stage(bytes, seen));
  spec.stages.push_back(step_stage(options, bytes, seen));
  add_staging(spec, bytes, std::nullopt);
  return spec;
}

}  // namespace streamsafe::testing
