// poison_adaptor: the fill at free, ordered after every stream that used the block.
#include "streamsafe/alloc/poison_adaptor.hpp"

#include <mutex>
#include <unordered_map>
#include <vector>

#include "alloc/stream_share.hpp"

namespace streamsafe {

namespace detail {

class poison_state {
 public:
  explicit poison_state(const Device& device) : poisoner(device, stream_options{.name = "poison_adaptor"}) {}
  Stream poisoner;  // fills the blocks that streams other than their allocation stream used
  std::mutex mutex;
  std::unordered_map<void*, std::vector<std::shared_ptr<StreamImpl>>> recorded;  // by live pointer

  /// The streams recorded on `ptr`, forgotten here.
  std::vector<std::shared_ptr<StreamImpl>> take_recorded(void* ptr) {
    std::lock_guard lock(mutex);
    const auto it = recorded.find(ptr);
    if (it == recorded.end()) return {};
    std::vector<std::shared_ptr<StreamImpl>> streams = std::move(it->second);
    recorded.erase(it);
    return streams;
  }
};

}  // namespace detail

poison_adaptor::poison_adaptor(caching_allocator& upstream, std::uint8_t pattern)
    : upstream_(upstream), pattern_(pattern), state_(std::make_unique<detail::poison_state>(upstream.device())) {}

poison_adaptor::~poison_adaptor() = default;

void* poison_adaptor::allocate(std::size_t bytes, StreamRef stream) { return upstream_.allocate(bytes, stream); }

void poison_adaptor::record_stream(void* ptr, StreamRef stream) {
  upstream_.record_stream(ptr, stream);  // validates the pointer and the stream's device
  if (upstream_.allocation_stream(ptr) == stream) return;
  std::lock_guard lock(state_->mutex);
  state_->recorded[ptr].push_back(detail::share_stream(stream.impl()));
}

void poison_adaptor::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  const block_info block = upstream_.block_of(ptr);  // throws for a pointer not live, before anything changes
  StreamRef owner = upstream_.allocation_stream(ptr);
  const std::vector<std::shared_ptr<detail::StreamImpl>> recorded = state_->take_recorded(ptr);
  if (recorded.empty()) {
    owner.fill(block.base, pattern_, block.size);
    upstream_.deallocate(ptr);
    return;
  }
  StreamRef poisoner = state_->poisoner;
  poisoner.wait(owner);
  for (const std::shared_ptr<detail::StreamImpl>& user : recorded) poisoner.wait(StreamRef(user.get()));
  poisoner.fill(block.base, pattern_, block.size);
  upstream_.record_stream(ptr, poisoner);  // the block is reusable once the fill is done
  upstream_.deallocate(ptr);
}

}  // namespace streamsafe
