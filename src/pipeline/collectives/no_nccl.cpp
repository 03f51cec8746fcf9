// The nccl communicator in a build without the cuda backend: every entry point says so.
#include "streamsafe/pipeline/collectives/nccl_communicator.hpp"

#include "streamsafe/error.hpp"

namespace streamsafe::collectives {

namespace detail {
class NcclState {};
}  // namespace detail

namespace {
[[noreturn]] void no_nccl() { throw usage_error("nccl_communicator: this build of streamsafe has no cuda backend"); }
}  // namespace

nccl_unique_id nccl_unique_id::create() { no_nccl(); }

nccl_communicator::nccl_communicator(const Device& device, int rank, int size, const nccl_unique_id& id)
    : device_(device), rank_(rank), size_(size), group_id_(id.hash()) {
  no_nccl();
}
nccl_communicator::~nccl_communicator() = default;
std::string nccl_communicator::name() const { return "nccl (not built)"; }
void nccl_communicator::begin_step(std::uint64_t /*step*/) { no_nccl(); }
void nccl_communicator::verify_order() { no_nccl(); }
void nccl_communicator::exchange_order(order_wait /*wait*/) { no_nccl(); }
void nccl_communicator::all_reduce(void* /*buffer*/, std::size_t /*count*/, data_type /*type*/, reduce_op /*op*/,
                                   StreamRef /*stream*/, const collective_label& /*label*/) {
  no_nccl();
}
void* nccl_communicator::native() const { return nullptr; }

}  // namespace streamsafe::collectives
