// The extern "C" entry points: argument checks and error reporting around torch_allocator.
#include <cstdio>
#include <exception>
#include <string>

#include "common/expects.hpp"
#include "instance.hpp"
#include "streamsafe_torch_alloc.h"
#include "torch_stats.hpp"

namespace streamsafe::torch_alloc {

namespace {

std::atomic<torch_allocator*> current{nullptr};
std::mutex instance_mutex;

thread_local std::string last_error;

/// Runs `call`, returning 0, or -1 with its message in last_error: for the calls ctypes makes,
/// which cannot see a C++ exception.
template <typename Call>
int status_of(Call&& call) noexcept {
  try {
    call();
    last_error.clear();
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
    return -1;
  }
}

}  // namespace

torch_allocator& instance() {
  if (auto* found = current.load(std::memory_order_acquire)) [[likely]] return *found;
  std::lock_guard lock(instance_mutex);
  if (current.load(std::memory_order_relaxed) == nullptr) {
    current.store(new torch_allocator(default_backend()), std::memory_order_release);
  }
  return *current.load(std::memory_order_relaxed);
}

void replace_instance(torch_backend backend) {
  std::lock_guard lock(instance_mutex);
  delete current.exchange(new torch_allocator(std::move(backend)), std::memory_order_acq_rel);
}

}  // namespace streamsafe::torch_alloc

using streamsafe::torch_alloc::instance;
using streamsafe::torch_alloc::last_error;
using streamsafe::torch_alloc::status_of;

extern "C" {

int streamsafe_torch_abi_version(void) { return 1; }

void* streamsafe_torch_malloc(ssize_t size, int device, streamsafe_cuda_stream stream) {
  SS_EXPECTS(size >= 0, "streamsafe_torch_malloc: negative size ", size, " on cuda:", device);
  return instance().allocate(static_cast<std::size_t>(size), device, stream);
}

void streamsafe_torch_free(void* ptr, ssize_t size, int device, streamsafe_cuda_stream stream) {
  try {
    instance().deallocate(ptr, device, stream);
  } catch (const std::exception& e) {
    // torch frees from destructors: an exception here would terminate the process.
    std::fprintf(stderr, "streamsafe torch allocator: free of %p (%zd bytes, cuda:%d) failed, block leaked: %s\n", ptr,
                 size, device, e.what());
  }
}

void streamsafe_torch_record_stream(void* ptr, streamsafe_cuda_stream stream) { instance().record_stream(ptr, stream); }

void streamsafe_torch_empty_cache(void) {
  if (status_of([] { instance().empty_cache(); }) != 0) {
    std::fprintf(stderr, "streamsafe torch allocator: empty_cache failed: %s\n", last_error.c_str());
  }
}

int streamsafe_torch_configure(const char* conf) {
  return status_of([&] {
    SS_EXPECTS(conf != nullptr, "streamsafe_torch_configure: null options string");
    instance().configure(conf);
  });
}

size_t streamsafe_torch_stats(int device, streamsafe_torch_stat* out, size_t capacity) {
  const auto keys = streamsafe::torch_alloc::torch_stat_keys();
  if (capacity == 0 || out == nullptr) return keys.size();
  std::vector<std::int64_t> values(keys.size(), 0);
  if (status_of([&] { values = streamsafe::torch_alloc::torch_stat_values(instance().stats(device)); }) != 0) return 0;
  for (std::size_t i = 0; i < keys.size() && i < capacity; ++i) out[i] = {keys[i], values[i]};
  return keys.size();
}

int streamsafe_torch_reset_peak_stats(int device) {
  return status_of([&] { instance().reset_peak_stats(device); });
}

size_t streamsafe_torch_deferred_frees(void) { return instance().deferred_frees(); }

const char* streamsafe_torch_last_error(void) { return last_error.c_str(); }

}  // extern "C"
