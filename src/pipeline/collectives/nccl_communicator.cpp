#include "streamsafe/pipeline/collectives/nccl_communicator.hpp"

#include <array>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "common/expects.hpp"
#include "pipeline/collectives/all_reduce_record.hpp"
#include "pipeline/collectives/nccl_check.hpp"
#include "pipeline/collectives/order_wire.hpp"
#include "runtime/cuda/cuda_check.hpp"

namespace streamsafe::collectives {

namespace detail {

/// One in-flight exchange of a step's sequence: pinned send and receive staging, the device
/// buffers NCCL gathers through, and the event that says the received copy has landed.
struct OrderExchange {
  WireSequence* send_host = nullptr;
  WireSequence* recv_host = nullptr;
  void* send_device = nullptr;
  void* recv_device = nullptr;
  cudaEvent_t landed = nullptr;
  bool pending = false;
};

class NcclState {
 public:
  explicit NcclState(int size) : size_(size) {}
  ~NcclState();
  NcclState(const NcclState&) = delete;
  NcclState& operator=(const NcclState&) = delete;

  /// The exchange's own stream, events and buffers, made once (none are made per step).
  void allocate_exchanges(const std::string& context);
  /// After the last collective issued (wherever its stream is now), all-gathers `sequence`.
  void exchange(const collective_sequence& sequence, const std::string& context);
  /// Compares the exchanges that have landed, without blocking.
  void compare_landed(const std::string& context);
  /// Blocks until every exchange in flight has landed.
  void wait_landed(const std::string& context);

  ncclComm_t comm = nullptr;
  bool failed = false;  // a call failed: abort rather than destroy, as peers may be stuck
  cudaEvent_t last_collective = nullptr;  // recorded after every all-reduce, on its stream
  bool step_open = false;  // begin_step ran: every rank exchanges once per step, collectives or not
  std::map<std::uint32_t, std::string> bucket_names;

 private:
  void compare(OrderExchange& slot);

  int size_;
  cudaStream_t exchange_stream_ = nullptr;
  std::array<OrderExchange, 2> exchanges_{};
  std::size_t next_ = 0;
};

NcclState::~NcclState() {
  // Destructors cannot throw: results are ignored. A failed communicator is aborted first, so
  // the exchanges' events cannot wait on a collective whose peers are gone.
  if (comm != nullptr && failed) ncclCommAbort(std::exchange(comm, nullptr));
  for (auto& x : exchanges_) {
    if (x.landed != nullptr) {
      cudaEventSynchronize(x.landed);
      cudaEventDestroy(x.landed);
    }
    cudaFreeHost(x.send_host);
    cudaFreeHost(x.recv_host);
    cudaFree(x.send_device);
    cudaFree(x.recv_device);
  }
  if (last_collective != nullptr) cudaEventDestroy(last_collective);
  if (exchange_stream_ != nullptr) cudaStreamDestroy(exchange_stream_);
  if (comm != nullptr) ncclCommDestroy(comm);
}

void NcclState::allocate_exchanges(const std::string& context) {
  const std::size_t all = sizeof(WireSequence) * static_cast<std::size_t>(size_);
  SS_CUDA_TRY(cudaStreamCreateWithFlags(&exchange_stream_, cudaStreamNonBlocking), context);
  SS_CUDA_TRY(cudaEventCreateWithFlags(&last_collective, cudaEventDisableTiming), context);
  for (auto& x : exchanges_) {
    SS_CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&x.send_host), sizeof(WireSequence)), context);
    SS_CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&x.recv_host), all), context);
    SS_CUDA_TRY(cudaMalloc(&x.send_device, sizeof(WireSequence)), context);
    SS_CUDA_TRY(cudaMalloc(&x.recv_device, all), context);
    SS_CUDA_TRY(cudaEventCreateWithFlags(&x.landed, cudaEventDisableTiming), context);
  }
}

void NcclState::exchange(const collective_sequence& sequence, const std::string& context) {
  if (!step_open) return;
  cudaStream_t stream = exchange_stream_;
  OrderExchange& slot = exchanges_[next_];
  next_ = (next_ + 1) % exchanges_.size();
  if (slot.pending) {  // two steps old: long landed in a running pipeline, so this rarely waits
    SS_CUDA_TRY(cudaEventSynchronize(slot.landed), context);
    compare(slot);
  }
  const std::size_t all = sizeof(WireSequence) * static_cast<std::size_t>(size_);
  *slot.send_host = to_wire(sequence);
  SS_CUDA_TRY(cudaStreamWaitEvent(stream, last_collective, 0), context);
  SS_CUDA_TRY(cudaMemcpyAsync(slot.send_device, slot.send_host, sizeof(WireSequence), cudaMemcpyHostToDevice, stream),
                   context);
  SS_NCCL_TRY(ncclAllGather(slot.send_device, slot.recv_device, sizeof(WireSequence), ncclChar, comm, stream), context);
  SS_CUDA_TRY(cudaMemcpyAsync(slot.recv_host, slot.recv_device, all, cudaMemcpyDeviceToHost, stream), context);
  SS_CUDA_TRY(cudaEventRecord(slot.landed, stream), context);
  slot.pending = true;
}

void NcclState::wait_landed(const std::string& context) {
  for (auto& slot : exchanges_) {
    if (slot.pending) SS_CUDA_TRY(cudaEventSynchronize(slot.landed), context);
  }
}

void NcclState::compare_landed(const std::string& context) {
  for (auto& slot : exchanges_) {
    if (!slot.pending) continue;
    const cudaError_t status = cudaEventQuery(slot.landed);
    if (status == cudaErrorNotReady) continue;
    SS_CUDA_TRY(status, context);
    compare(slot);
  }
}

void NcclState::compare(OrderExchange& slot) {
  slot.pending = false;
  const std::string mismatch = compare_wires(slot.recv_host, size_, bucket_names);
  if (!mismatch.empty()) throw order_mismatch(mismatch);
}

}  // namespace detail

nccl_unique_id nccl_unique_id::create() {
  ncclUniqueId id;
  SS_NCCL_TRY(ncclGetUniqueId(&id), std::string("a new communicator"));
  nccl_unique_id out;
  static_assert(sizeof(id) == sizeof(out.bytes));
  std::memcpy(out.bytes.data(), &id, sizeof(id));
  return out;
}

nccl_communicator::nccl_communicator(const Device& device, int rank, int size, const nccl_unique_id& id)
    : device_(device), rank_(rank), size_(size), group_id_(id.hash()), state_(std::make_unique<detail::NcclState>(size)) {
  SS_EXPECTS(device.backend() == backend_kind::cuda, "nccl_communicator: device '", device.name(),
             "' is not a cuda device");
  SS_EXPECTS(size > 0 && rank >= 0 && rank < size, "nccl_communicator: rank ", rank, " outside a group of ", size);
  SS_CUDA_TRY(cudaSetDevice(device.ordinal()), name());
  ncclUniqueId native_id;
  std::memcpy(&native_id, id.bytes.data(), sizeof(native_id));
  SS_NCCL_TRY(ncclCommInitRank(&state_->comm, size, native_id, rank), name());
  state_->allocate_exchanges(name());
}

nccl_communicator::~nccl_communicator() = default;

std::string nccl_communicator::name() const {
  return "nccl rank " + std::to_string(rank_) + "/" + std::to_string(size_) + " (cuda:" +
         std::to_string(device_.ordinal()) + ")";
}

void nccl_communicator::exchange_order(order_wait wait) {
  try {
    state_->exchange(issued_, name());
    if (wait == order_wait::until_compared) state_->wait_landed(name());
    state_->compare_landed(name());
  } catch (...) {
    state_->failed = true;  // peers may be inside the exchange: abort, do not destroy
    throw;
  }
}

void nccl_communicator::begin_step(std::uint64_t step) {
  exchange_order(order_wait::landed_only);
  issued_.begin(step);
  state_->step_open = true;
}

void nccl_communicator::verify_order() {
  exchange_order(order_wait::until_compared);
  state_->step_open = false;  // exchanged: the next begin_step has nothing to send
}

void nccl_communicator::all_reduce(void* buffer, std::size_t count, data_type type, reduce_op op, StreamRef stream,
                                   const collective_label& label) {
  SS_EXPECTS(stream.device() == device_, name(), ": all_reduce '", label.name, "' on stream '", stream.name(),
             "' of another device");
  issued_.add(detail::all_reduce_record(name(), count, type, op, label));
  state_->bucket_names.try_emplace(label.bucket, label.name);
  const ncclResult_t status = ncclAllReduce(buffer, buffer, count, ncclFloat32, ncclSum, state_->comm, stream.native());
  if (status != ncclSuccess) {
    state_->failed = true;
    detail::throw_nccl_error(status, "ncclAllReduce", name() + ", collective '" + label.name + "' on stream '" +
                                                         stream.name() + "'");
  }
  SS_CUDA_TRY(cudaEventRecord(state_->last_collective, stream.native()), name() + ", after '" + label.name + "'");

}

void* nccl_communicator::native() const { return state_->comm; }

}  // namespace streamsafe::collectives
