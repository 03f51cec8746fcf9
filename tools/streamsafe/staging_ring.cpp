#include "staging_ring.hpp"

#include <cstring>

#include "streamsafe/error.hpp"

namespace streamsafe::demo {

staging_ring::staging_ring(const Device& device, loop_ops& ops, image_shape shape, std::size_t slots, bool fenced)
    : device_(device), ops_(ops), shape_(shape), fenced_(fenced), filled_(slots, false) {
  if (slots == 0) throw usage_error("staging_ring: at least one slot is needed");
  for (std::size_t k = 0; k < slots; ++k) {
    slots_.push_back(static_cast<std::uint8_t*>(device_.allocate_pinned(shape_.pixels())));
    read_.emplace_back(device_);
  }
}

staging_ring::~staging_ring() {
  device_.synchronize();
  for (std::uint8_t* slot : slots_) device_.deallocate_pinned(slot);
}

const std::uint8_t* staging_ring::fill(std::size_t batch) {
  const std::size_t k = batch % slots_.size();
  if (fenced_ && !read_[k].query()) {
    ++blocked_waits_;
    read_[k].synchronize();
  }
  std::uint8_t* bytes = slots_[k];
  ops_.host_writes(bytes, shape_.pixels());
  if (!filled_[k]) {
    for (std::size_t i = 0; i < shape_.pixels(); ++i) bytes[i] = static_cast<std::uint8_t>((i * 31 + batch) & 0xff);
    filled_[k] = true;
    return bytes;
  }
  const std::size_t row = shape_.width * 3;
  for (std::size_t n = 0; n < shape_.images; ++n) std::memset(bytes + n * shape_.per_image(), static_cast<int>(batch & 0xff), row);
  return bytes;
}

void staging_ring::copied(std::size_t batch, StreamRef stream) { read_[batch % slots_.size()].record(stream); }

}  // namespace streamsafe::demo
