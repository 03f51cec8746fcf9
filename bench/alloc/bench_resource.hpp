// The allocators the benchmark compares, behind one small interface so every case runs the same
// body over each of them (RMM's multi_stream_allocations bench does the same with factories).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace streamsafe::bench {

inline constexpr int bench_streams = 9;  // 8 for the threaded case, one more as "the other stream"

class bench_resource {
 public:
  virtual ~bench_resource() = default;
  /// On stream `stream` (0..bench_streams-1).
  [[nodiscard]] virtual void* allocate(std::size_t bytes, int stream) = 0;
  virtual void deallocate(void* ptr) = 0;
  /// Allocates on `stream`, records `other` on the block, frees it; false when the resource has
  /// no record_stream (the case is then skipped).
  virtual bool alloc_record_free(std::size_t bytes, int stream, int other) = 0;
  /// Lets deferred frees complete and be reclaimed (a no-op where frees are immediate).
  virtual void reclaim() = 0;
  /// Events the resource recorded to hold record_stream'd frees so far; -1 when it cannot tell.
  [[nodiscard]] virtual double free_fences() const { return -1; }
};

enum class resource_kind { streamsafe_sim, streamsafe_cuda, cuda_malloc, cuda_malloc_async, torch_caching };

/// The resource, shared by every case and thread of the run; nullptr with `why` set when it
/// cannot run here (no GPU, not built with libtorch).
bench_resource* shared_resource(resource_kind kind, std::string& why);

// Factories of the optional parts (cuda_resources.cpp / torch_resource.cpp, or stubs).
std::unique_ptr<bench_resource> make_cuda_malloc(std::string& why);
std::unique_ptr<bench_resource> make_cuda_malloc_async(std::string& why);
std::unique_ptr<bench_resource> make_torch_caching(std::string& why);

}  // namespace streamsafe::bench
