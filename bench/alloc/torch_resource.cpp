// PyTorch's c10 CUDACachingAllocator from C++: raw_alloc_with_stream / raw_delete, and
// allocate + recordStream for the record_stream case; and the same calls as a replay_target for
// the replay benchmark. Built only with STREAMSAFE_TORCH_DIR.
#include <c10/core/Device.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string_view>
#include <vector>

#include "bench_resource.hpp"
#include "replay_resource.hpp"

namespace streamsafe::bench {

namespace {

class torch_caching_resource final : public bench_resource {
 public:
  torch_caching_resource() {
    for (int i = 0; i < bench_streams; ++i) streams_.push_back(c10::cuda::getStreamFromPool(false, 0));
  }
  void* allocate(std::size_t bytes, int stream) override {
    return c10::cuda::CUDACachingAllocator::raw_alloc_with_stream(bytes, streams_[static_cast<std::size_t>(stream)]);
  }
  void deallocate(void* ptr) override { c10::cuda::CUDACachingAllocator::raw_delete(ptr); }
  /// recordStream takes a DataPtr made by the allocator, so this case allocates through
  /// allocate() on `stream` (made current) instead of raw_alloc_with_stream.
  bool alloc_record_free(std::size_t bytes, int stream, int other) override {
    c10::cuda::CUDAStreamGuard guard(streams_[static_cast<std::size_t>(stream)]);
    c10::DataPtr data = c10::cuda::CUDACachingAllocator::get()->allocate(bytes);
    c10::cuda::CUDACachingAllocator::recordStream(data, streams_[static_cast<std::size_t>(other)]);
    return true;  // the DataPtr's deleter frees the block here
  }
  void reclaim() override {}  // PyTorch polls its events inside later allocations

 private:
  std::vector<c10::cuda::CUDAStream> streams_;
};

namespace alloc = c10::cuda::CUDACachingAllocator;

class c10_replay_target final : public replay_target {
 public:
  c10_replay_target(const c10_replay_target&) = delete;
  c10_replay_target& operator=(const c10_replay_target&) = delete;
  c10_replay_target() = default;
  // Cold for the next run in this process: emptyCache first waits for the pending frees' events.
  ~c10_replay_target() override { alloc::emptyCache(); }

  void* allocate(std::size_t bytes, StreamRef stream) override {
    return alloc::raw_alloc_with_stream(bytes, stream.native());
  }
  void deallocate(void* ptr) override { alloc::raw_delete(ptr); }
  /// recordStream takes a DataPtr and acts only on one carrying the allocator's own deleter:
  /// a view of the raw block with that deleter, released unfreed (raw_delete frees the block).
  void record_stream(void* ptr, StreamRef stream) override {
    c10::DataPtr view(ptr, ptr, alloc::get()->raw_deleter(), c10::Device(c10::DeviceType::CUDA, 0));
    alloc::recordStream(view, c10::cuda::getStreamFromExternal(stream.native(), 0));
    (void)view.release_context();
  }
  void reset_reserved_peak() override { alloc::resetPeakStats(0); }
  replay_counters counters() const override {
    const auto stats = alloc::getDeviceStats(0);
    constexpr std::size_t aggregate = 0;  // StatType::AGGREGATE: both pools
    return replay_counters{
        .device_calls = static_cast<std::uint64_t>(stats.num_device_alloc + stats.num_device_free),
        .device_allocations = static_cast<std::uint64_t>(stats.num_device_alloc),
        .host_syncs = static_cast<std::uint64_t>(stats.num_sync_all_streams),
        .peak_reserved_bytes = static_cast<std::uint64_t>(stats.reserved_bytes[aggregate].peak),
    };
  }
};

/// Python's torch.cuda does this at its lazy init; from C++ it is ours to do. False: no device.
bool init_c10() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return false;
  if (!alloc::get()->initialized()) alloc::init(count);
  return true;
}

}  // namespace

std::unique_ptr<bench_resource> make_torch_caching(std::string& why) {
  if (!init_c10()) {
    why = "no CUDA device";
    return nullptr;
  }
  return std::make_unique<torch_caching_resource>();
}

replay_resource make_c10_replay(bool expandable) {
  const char* conf = std::getenv("PYTORCH_CUDA_ALLOC_CONF");
  const bool started_expandable = conf != nullptr && std::string_view(conf).find("expandable_segments:True") !=
                                                         std::string_view::npos;
  if (started_expandable != expandable) {
    return replay_resource{.why = expandable ? "c10_expandable needs PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
                                               "in the environment (c10 reads it once, at its init)"
                                             : "c10 (native) needs PYTORCH_CUDA_ALLOC_CONF without expandable_segments"};
  }
  if (!init_c10()) return replay_resource{.why = "no CUDA device"};
  return replay_resource{.target = std::make_unique<c10_replay_target>(),
                         .counted = replay_counted{.device_calls = true, .host_syncs = true}};
}

}  // namespace streamsafe::bench
