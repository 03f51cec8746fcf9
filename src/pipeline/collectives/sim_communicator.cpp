#include "streamsafe/pipeline/collectives/sim_communicator.hpp"

#include <atomic>
#include <utility>

#include "common/expects.hpp"
#include "pipeline/collectives/all_reduce_record.hpp"
#include "pipeline/collectives/sim_rendezvous.hpp"
#include "streamsafe/device.hpp"

namespace streamsafe::collectives {

namespace {
std::uint64_t next_group_id() noexcept {
  static std::atomic<std::uint64_t> groups{0};
  return groups.fetch_add(1, std::memory_order_relaxed) + 1;
}
}  // namespace

sim_group::sim_group(int size, sim_group_options options)
    : rendezvous_(std::make_shared<detail::SimRendezvous>(size, options.timeout)), id_(next_group_id()) {
  SS_EXPECTS(size > 0, "sim_group: size ", size, " is not positive");
}

int sim_group::size() const { return rendezvous_->size(); }

std::string sim_group::abort_reason() const { return rendezvous_->abort_reason(); }

sim_communicator::sim_communicator(std::shared_ptr<sim_group> group, int rank) : group_(std::move(group)), rank_(rank) {
  SS_EXPECTS(group_ != nullptr, "sim_communicator: no group");
  SS_EXPECTS(rank >= 0 && rank < group_->size(), "sim_communicator: rank ", rank, " outside a group of ", group_->size());
}

int sim_communicator::size() const { return group_->size(); }

std::string sim_communicator::name() const {
  return "sim rank " + std::to_string(rank_) + "/" + std::to_string(group_->size());
}

void sim_communicator::all_reduce(void* buffer, std::size_t count, data_type type, reduce_op op, StreamRef stream,
                                  const collective_label& label) {
  SS_EXPECTS(stream.device().backend() == backend_kind::sim, name(), ": all_reduce '", label.name, "' on stream '",
             stream.name(), "', which is not a sim stream");
  issued_.add(detail::all_reduce_record(name(), count, type, op, label));
  // The kernel keeps what the host had issued up to this collective, for the order check.
  auto issued = std::make_shared<const collective_sequence>(issued_);
  auto group = group_;
  const std::uint64_t index = next_index_++;
  const int rank = rank_;
  auto* data = static_cast<float*>(buffer);
  stream.launch(kernel{.name = "all_reduce '" + label.name + "'",
                       .cuda = {},
                       .sim = [group, issued, index, rank, data, count] {
                         group->rendezvous().all_reduce(
                             index, detail::SimArrival{.rank = rank, .issued = issued.get(), .data = data, .count = count});
                       }});
}

}  // namespace streamsafe::collectives
