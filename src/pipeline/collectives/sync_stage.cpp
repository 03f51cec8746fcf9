#include "streamsafe/pipeline/collectives/sync_stage.hpp"

#include "common/expects.hpp"

namespace streamsafe::collectives {

namespace {

void check(const sync_spec& sync) {
  SS_EXPECTS(sync.plan != nullptr && sync.comm != nullptr && !sync.gradients.empty(), "sync stage '", sync.name,
             "': needs a bucket plan, a communicator and a gradient buffer");
}

}  // namespace

std::string bucket_signal(const sync_spec& sync, std::uint32_t id) {
  return sync.gradients + ".bucket" + std::to_string(id);
}

std::vector<pipeline::signal_spec> bucket_signals(const sync_spec& sync) {
  check(sync);
  std::vector<pipeline::signal_spec> signals;
  for (const bucket& b : sync.plan->buckets()) signals.push_back({bucket_signal(sync, b.id), {sync.gradients}});
  return signals;
}

void publish_bucket(pipeline::stage_context& ctx, const sync_spec& sync, std::uint32_t id) {
  ctx.publish(bucket_signal(sync, id));
}

pipeline::stage_spec sync_stage(const sync_spec& sync) {
  check(sync);
  std::vector<std::string> signals;
  for (const bucket& b : sync.plan->buckets()) signals.push_back(bucket_signal(sync, b.id));
  auto body = [sync, signals](pipeline::stage_context& ctx) {
    sync.comm->begin_step(ctx.batch());
    for (const bucket& b : sync.plan->buckets()) {
      ctx.all_reduce(*sync.comm, signals[b.id], sync.gradients, b.offset, b.bytes, {.bucket = b.id, .name = b.name});
    }
  };
  pipeline::stage_spec stage;
  stage.name = sync.name;
  stage.waits_for = signals;
  stage.body = std::move(body);
  stage.resource = pipeline::stage_resource::network;
  stage.stream = sync.stream;
  return stage;
}

}  // namespace streamsafe::collectives
