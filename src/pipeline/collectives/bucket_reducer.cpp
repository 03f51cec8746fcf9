#include "streamsafe/pipeline/collectives/bucket_reducer.hpp"

#include "common/expects.hpp"
#include "streamsafe/device.hpp"

namespace streamsafe::collectives {

bucket_reducer::bucket_reducer(communicator& comm, const bucket_plan& plan, void* gradients, StreamRef comm_stream)
    : comm_(comm),
      plan_(plan),
      gradients_(static_cast<char*>(gradients)),
      comm_stream_(comm_stream),
      reduced_(comm_stream.device()) {
  SS_EXPECTS(gradients != nullptr, comm.name(), ": bucket_reducer without a gradient buffer");
  ready_.reserve(plan.buckets().size());
  for (std::size_t i = 0; i < plan.buckets().size(); ++i) ready_.emplace_back(comm_stream.device());
}

void bucket_reducer::begin_step(std::uint64_t step) { comm_.begin_step(step); }

void bucket_reducer::bucket_ready(std::uint32_t id, StreamRef producer) {
  SS_EXPECTS(id < plan_.buckets().size(), comm_.name(), ": bucket ", id, " outside a plan of ", plan_.buckets().size(),
             " buckets");
  const bucket& b = plan_.buckets()[id];
  Event& ready = ready_[id];
  ready.record(producer);
  comm_stream_.wait(ready);  // the bucket's gradients are written before the reduction reads them
  comm_.all_reduce(gradients_ + b.offset, b.bytes / sizeof(float), data_type::float32, reduce_op::sum, comm_stream_,
                   collective_label{.bucket = b.id, .name = b.name});
  reduced_.record(comm_stream_);
}

void bucket_reducer::order_after_reduce(StreamRef consumer) { consumer.wait(reduced_); }

}  // namespace streamsafe::collectives
