// The busy-device model of `streamsafe replay --busy` and of the replay benchmark: device work
// beside a replayed trace, as a training step would keep the device busy, so that a host
// synchronization inside an allocator shows as host time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::demo {

/// Owns one scratch word per stream for its busy kernels: device memory that lives until this
/// object is destroyed, so destroy it after the replay (and the allocator it drove) is done.
/// Not thread-safe: the replaying thread uses it.
class busy_device {
 public:
  static constexpr std::size_t slots = 256;
  /// How much of each new block, and of each record_stream'd block, the touch fills.
  static constexpr std::size_t touched_bytes = 4096;

  explicit busy_device(Device device);
  busy_device(const busy_device&) = delete;
  busy_device& operator=(const busy_device&) = delete;
  ~busy_device();

  /// A busy_kernel of `busy_us` every `every` operations on the operation's stream, and a fill
  /// of the first touched_bytes of each new block on its stream. The work refers to this object.
  [[nodiscard]] replay_work work(unsigned busy_us, std::size_t every);

 private:
  std::uint32_t* slot_of(StreamRef stream);

  Device device_;
  std::uint32_t* scratch_ = nullptr;
  std::map<stream_id, std::size_t> slot_;
};

}  // namespace streamsafe::demo
