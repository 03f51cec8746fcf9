// One rank's streams, gradient buffer and reducer, as the sync stage holds them.
#pragma once

#include <memory>

#include "sim_ranks.hpp"
#include "streamsafe/pipeline/collectives/bucket_reducer.hpp"

namespace streamsafe::collectives::testing {

struct rank_setup {
  rank_setup(Device& device, communicator& comm, const bucket_plan& plan)
      : producer(device, stream_options{.name = "backward", .pacing = sim_pacing::starved}),
        comm_stream(device, stream_options{.name = "comm"}),
        consumer(device, stream_options{.name = "optimizer"}),
        gradients(static_cast<float*>(device.allocate(plan.total_bytes())),
                  [device](float* p) mutable { device.deallocate(p); }),
        reducer(comm, plan, gradients.get(), comm_stream) {}

  /// Backward in `order`: each bucket produced, then handed to the reducer.
  void backward(const bucket_plan& plan, const std::vector<std::uint32_t>& order, int rank, std::uint64_t step) {
    for (auto id : order) {
      produce_bucket(producer, gradients.get(), plan.buckets()[id], rank, step);
      reducer.bucket_ready(id, producer);
    }
  }

  /// The optimizer's view of the gradients after the step's all-reduces.
  std::vector<float> reduced(const bucket_plan& plan) {
    reducer.order_after_reduce(consumer);
    return read_floats(consumer, gradients.get(), plan.total_bytes() / sizeof(float));
  }

  Stream producer;  // starved on sim: a comm stream that does not wait reads before it writes
  Stream comm_stream;
  Stream consumer;
  std::unique_ptr<float, std::function<void(float*)>> gradients;
  bucket_reducer reducer;
};

/// 0, 1, ..., n-1: the plan's order.
std::vector<std::uint32_t> plan_order(const bucket_plan& plan);

}  // namespace streamsafe::collectives::testing
