#include "busy_device.hpp"

#include <algorithm>
#include <utility>

#include "demo_kernels.hpp"

namespace streamsafe::demo {

busy_device::busy_device(Device device) : device_(std::move(device)) {
  scratch_ = static_cast<std::uint32_t*>(device_.allocate(slots * sizeof(std::uint32_t)));
}

busy_device::~busy_device() { device_.deallocate(scratch_); }

replay_work busy_device::work(unsigned busy_us, std::size_t every) {
  return replay_work{
      .touch = [](StreamRef stream, void* ptr, std::size_t bytes) {
        stream.fill(ptr, 0, std::min(bytes, touched_bytes));
      },
      .step = [this, busy_us](StreamRef stream) { stream.launch(busy_kernel(slot_of(stream), busy_us)); },
      .step_every = every,
  };
}

std::uint32_t* busy_device::slot_of(StreamRef stream) {
  const auto [it, added] = slot_.try_emplace(stream.id(), slot_.size() % slots);
  return scratch_ + it->second;
}

}  // namespace streamsafe::demo
