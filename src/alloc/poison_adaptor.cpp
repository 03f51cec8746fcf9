// poison_adaptor: the fill at free, ordered after every stream that used the block.
#include "streamsafe/alloc/poison_adaptor.hpp"

#include <mutex>
#include <unordered_map>
#include <vector>

#include "alloc/stream_share.hpp"
#include "common/expects.hpp"

namespace streamsafe {

namespace detail {

/// What the adaptor knows of a block allocated through it.
struct poisoned_block {
  std::size_t bytes = 0;
  std::shared_ptr<StreamImpl> stream;                 // the allocation stream
  std::vector<std::shared_ptr<StreamImpl>> recorded;  // the other streams that use it
};

class poison_state {
 public:
  explicit poison_state(const Device& device) : poisoner(device, stream_options{.name = "poison_adaptor"}) {}
  Stream poisoner;  // fills the blocks that streams other than their allocation stream used

  void add(void* ptr, poisoned_block block) {
    std::lock_guard lock(mutex_);
    live_.emplace(ptr, std::move(block));
  }
  /// Whether `stream` is not `ptr`'s allocation stream; usage_error naming `call` when `ptr` is
  /// not live here.
  [[nodiscard]] bool other_than_allocation_stream(void* ptr, StreamImpl& stream, const char* call) const {
    std::lock_guard lock(mutex_);
    return live(ptr, call).stream.get() != &stream;
  }
  void add_recorded(void* ptr, std::shared_ptr<StreamImpl> stream) {
    std::lock_guard lock(mutex_);
    live(ptr, "record_stream").recorded.push_back(std::move(stream));
  }
  /// The block at `ptr`, forgotten here; usage_error when it is not live here.
  [[nodiscard]] poisoned_block take(void* ptr) {
    std::lock_guard lock(mutex_);
    poisoned_block& found = live(ptr, "deallocate");
    poisoned_block taken = std::move(found);
    live_.erase(ptr);
    return taken;
  }

 private:
  [[nodiscard]] poisoned_block& live(void* ptr, const char* call) const {
    const auto it = live_.find(ptr);
    SS_EXPECTS(it != live_.end(), "poison_adaptor::", call, "(", ptr,
               "): not a live allocation of this adaptor (freed already, allocated elsewhere, or not the "
               "pointer allocate returned); nothing changed");
    return it->second;
  }

  mutable std::mutex mutex_;
  mutable std::unordered_map<void*, poisoned_block> live_;
};

}  // namespace detail

poison_adaptor::poison_adaptor(resource_ref upstream, const Device& device, std::uint8_t pattern)
    : upstream_(upstream), pattern_(pattern), state_(std::make_unique<detail::poison_state>(device)) {}

poison_adaptor::~poison_adaptor() = default;

void* poison_adaptor::allocate(std::size_t bytes, StreamRef stream) {
  void* ptr = upstream_.allocate(bytes, stream);
  if (ptr == nullptr) return nullptr;
  try {
    state_->add(ptr, detail::poisoned_block{bytes, detail::share_stream(stream.impl()), {}});
  } catch (...) {
    upstream_.deallocate(ptr);  // unknown here, it could never be freed through the adaptor
    throw;
  }
  return ptr;
}

void poison_adaptor::record_stream(void* ptr, StreamRef stream) {
  const bool other = state_->other_than_allocation_stream(ptr, stream.impl(), "record_stream");
  upstream_.record_stream(ptr, stream);  // validates the stream's device
  if (other) state_->add_recorded(ptr, detail::share_stream(stream.impl()));
}

void poison_adaptor::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  const detail::poisoned_block block = state_->take(ptr);  // throws for a pointer not live, before anything changes
  StreamRef owner(block.stream.get());
  const std::vector<std::shared_ptr<detail::StreamImpl>>& recorded = block.recorded;
  if (recorded.empty()) {
    owner.fill(ptr, pattern_, block.bytes);
    upstream_.deallocate(ptr);
    return;
  }
  StreamRef poisoner = state_->poisoner;
  poisoner.wait(owner);
  for (const std::shared_ptr<detail::StreamImpl>& user : recorded) poisoner.wait(StreamRef(user.get()));
  poisoner.fill(ptr, pattern_, block.bytes);
  upstream_.record_stream(ptr, poisoner);  // the block is reusable once the fill is done
  upstream_.deallocate(ptr);
}

}  // namespace streamsafe
