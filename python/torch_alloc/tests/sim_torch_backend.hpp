// A torch_backend on one sim device, for running the torch allocator's C ABI without a GPU:
// fake native handles stand for torch's streams, and a test says which ones are capturing.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "torch_backend.hpp"

namespace streamsafe::torch_alloc::testing {

struct sim_torch_state {
  Device device = Device::sim();
  std::mutex mutex;
  /// How the stream adopted for a handle is made (pacing: starved makes its work lag).
  std::map<native_stream, stream_options> plans;
  /// The stream adopted for each handle, once the allocator adopted it.
  std::map<native_stream, StreamRef> adopted;
  std::set<native_stream> capturing;
  /// Whether `capturing` has any entry: read without the mutex, so the allocator's calls are not
  /// ordered by this test double (ThreadSanitizer would see less).
  std::atomic<bool> any_capturing{false};
};

[[nodiscard]] torch_backend sim_torch_backend(std::shared_ptr<sim_torch_state> state);
/// A fake handle; never dereferenced.
[[nodiscard]] native_stream fake_handle(std::uintptr_t value);

}  // namespace streamsafe::torch_alloc::testing
