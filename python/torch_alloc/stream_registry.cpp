#include "stream_registry.hpp"

#include <mutex>

namespace streamsafe::torch_alloc {

stream_registry::stream_registry(Device device, std::function<Stream(const Device&, native_stream)> adopt)
    : device_(std::move(device)), adopt_(std::move(adopt)) {}

StreamRef stream_registry::resolve(native_stream native) {
  const auto handle = reinterpret_cast<std::uintptr_t>(native);
  if (native == nullptr || handle == legacy_stream_handle) return device_.default_stream();
  const key wanted{native, handle == per_thread_stream_handle ? std::this_thread::get_id() : std::thread::id{}};
  {
    std::shared_lock lock(mutex_);
    if (auto found = adopted_.find(wanted); found != adopted_.end()) return found->second;
  }
  std::unique_lock lock(mutex_);
  if (auto found = adopted_.find(wanted); found != adopted_.end()) return found->second;
  // Adopted under the lock: a wrapper is made on the thread that names the handle (which is
  // what a per-thread stream's wrapper needs) and only one wrapper is ever made per key.
  return adopted_.emplace(wanted, adopt_(device_, native)).first->second;
}

}  // namespace streamsafe::torch_alloc
