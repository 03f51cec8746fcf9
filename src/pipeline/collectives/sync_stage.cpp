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
  std::vector<collective_label> labels;  // made once: the loop only passes them
  for (const bucket& b : sync.plan->buckets()) {
    signals.push_back(bucket_signal(sync, b.id));
    labels.push_back({.bucket = b.id, .name = b.name});
  }
  auto body = [sync, signals, labels](pipeline::stage_context& ctx) {
    sync.comm->begin_step(ctx.batch());
    for (const bucket& b : sync.plan->buckets()) {
      ctx.all_reduce(*sync.comm, signals[b.id], sync.gradients, b.offset, b.bytes, labels[b.id]);
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
