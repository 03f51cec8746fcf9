#include "sync_ranks.hpp"

#include <algorithm>
#include <utility>

#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe::testing {

namespace {

using collectives::bucket;
using collectives::bucket_plan;
using collectives::communicator;
using collectives::sync_spec;
using collectives::testing::gate;
using collectives::testing::gradient_indices;
using collectives::testing::gradient_value;
using collectives::testing::reduced_value;

std::string entry(std::size_t batch, const char* what, std::uint32_t bucket) {
  return "batch " + std::to_string(batch) + " " + what + " " + std::to_string(bucket);
}

// Forwards to the rank's communicator and notes, on the comm stream right after each all-reduce,
// that the bucket's sum is there (opening the gate after bucket 0).
class observed_communicator final : public communicator {
 public:
  observed_communicator(communicator& inner, run_log& log, gate& bucket0_reduced)
      : inner_(inner), log_(log), bucket0_reduced_(bucket0_reduced) {}
  [[nodiscard]] int rank() const override { return inner_.rank(); }
  [[nodiscard]] int size() const override { return inner_.size(); }
  [[nodiscard]] std::string name() const override { return inner_.name(); }
  [[nodiscard]] std::uint64_t group_id() const override { return inner_.group_id(); }
  void begin_step(std::uint64_t step) override {
    step_ = step;
    inner_.begin_step(step);
  }
  void all_reduce(void* buffer, std::size_t count, collectives::data_type type, collectives::reduce_op op, StreamRef stream,
                  const collectives::collective_label& label) override {
    inner_.all_reduce(buffer, count, type, op, stream, label);
    const bool first = label.bucket == 0;
    stream.launch(kernel{.name = "observe", .cuda = {}, .sim = [this, what = entry(step_, "reduced", label.bucket), first] {
                           log_.note(what);
                           if (first) bucket0_reduced_.open();
                         }});
  }
  [[nodiscard]] const collectives::collective_sequence& issued() const override { return inner_.issued(); }

 private:
  communicator& inner_;
  run_log& log_;
  gate& bucket0_reduced_;
  std::uint64_t step_ = 0;
};

struct rank_stages {
  const sync_spec& sync;
  int rank;
  int ranks;
  const sync_options& options;
  run_log& log;
  gate& bucket0_reduced;
  rank_result& result;
};

pipeline::stage_spec backward_stage(const rank_stages& r) {
  auto body = [r](pipeline::stage_context& ctx) {
    const pipeline::byte_span grads = ctx.buffer("grads");
    auto* values = reinterpret_cast<float*>(grads.data());
    const std::size_t batch = ctx.batch();
    for (const bucket& b : r.sync.plan->buckets()) {
      if (b.id == 1 && r.options.gate_after_bucket0) {
        ctx.launch(kernel{.name = "gate", .cuda = {}, .sim = [&g = r.bucket0_reduced] { g.pass(); }}, {}, {});
      }
      const std::size_t first = b.offset / sizeof(float);
      const std::size_t last = first + b.bytes / sizeof(float);
      kernel write{.name = "backward " + b.name, .cuda = {}, .sim = [=, &log = r.log, rank = r.rank] {
                     for (std::size_t i = first; i < last; ++i) values[i] = gradient_value(rank, i, batch);
                     log.note(entry(batch, "backward", b.id));
                   }};
      ctx.launch(write, {}, {grads.subspan(b.offset, b.bytes)});
      collectives::publish_bucket(ctx, r.sync, b.id);
    }
  };
  return {.name = "backward",
          .outputs = {{.name = "grads", .bytes = r.sync.plan->total_bytes()}},
          .publishes = collectives::bucket_signals(r.sync),
          .body = std::move(body),
          .stream = {.pacing = r.options.backward}};
}

pipeline::stage_spec step_stage(const rank_stages& r) {
  const std::vector<std::size_t> indices = gradient_indices(*r.sync.plan);
  auto body = [r, indices](pipeline::stage_context& ctx) {
    const float* grads = ctx.buffer_as<float>("grads").data();
    float* weights = ctx.buffer_as<float>("weights").data();
    const std::size_t batch = ctx.batch();
    const bool last = batch + 1 == r.options.batches;
    kernel sgd{.name = "sgd", .cuda = {}, .sim = [=, &result = r.result, ranks = r.ranks] {
                 for (const std::size_t i : indices) {
                   if (grads[i] != reduced_value(ranks, i, batch)) ++result.wrong_sums[batch];
                   weights[i] += grads[i];
                 }
                 if (last) {
                   for (const std::size_t i : indices) result.weights.push_back(weights[i]);
                 }
               }};
    ctx.launch(sgd, {ctx.buffer("grads"), ctx.buffer("weights")}, {ctx.buffer("weights")});
  };
  auto zero = [](pipeline::stage_context& ctx) {
    const pipeline::byte_span weights = ctx.buffer("weights");
    ctx.launch(kernel{.name = "zero", .cuda = {}, .sim = [weights] { std::fill(weights.begin(), weights.end(), std::byte{0}); }},
               {}, {weights});
  };
  return {.name = "step",
          .inputs = {"grads"},
          .outputs = {{.name = "weights", .bytes = r.sync.plan->total_bytes(), .scope = pipeline::buffer_scope::shared}},
          .body = std::move(body),
          .initialize = std::move(zero),
          .step = true};
}

}  // namespace

void run_log::note(std::string what) {
  std::lock_guard lock(mutex_);
  entries_.push_back(std::move(what));
}

std::vector<std::string> run_log::entries() const {
  std::lock_guard lock(mutex_);
  return entries_;
}

std::size_t run_log::position(const std::string& what) const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::find(entries_.begin(), entries_.end(), what) - entries_.begin());
}

rank_result run_sync_rank(Device& device, communicator& comm, const bucket_plan& plan, int ranks,
                          const sync_options& options, hazard::tracker* hazards) {
  rank_result result;
  result.wrong_sums.assign(options.batches, 0);
  run_log log;           // outlive the pipeline, whose streams' kernels use them
  gate bucket0_reduced;
  observed_communicator observed(comm, log, bucket0_reduced);
  const sync_spec sync{.gradients = "grads", .plan = &plan, .comm = &observed, .stream = {.pacing = options.sync}};
  const rank_stages stages{sync, comm.rank(), ranks, options, log, bucket0_reduced, result};
  pipeline::pipeline_spec spec;
  spec.stages.push_back(backward_stage(stages));
  spec.stages.push_back(collectives::sync_stage(sync));
  spec.stages.push_back(step_stage(stages));
  caching_allocator allocator(device);
  {
    pipeline::pipeline run(device, allocator, std::move(spec), hazards);
    result.loop_allocations = run.run(options.batches).loop_allocations;
  }
  result.order = log.entries();
  result.gate_gave_up = bucket0_reduced.gave_up();
  return result;
}

float expected_weight(int ranks, std::size_t index, std::size_t batches) {
  float sum = 0;
  for (std::size_t b = 0; b < batches; ++b) sum += reduced_value(ranks, index, b);
  return sum;
}

}  // namespace streamsafe::testing
