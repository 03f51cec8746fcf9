// allocator_observer's contract: callbacks run with none of the allocator's locks held, so a
// callback may read the allocator (a callback run under a stream's spin lock would spin forever
// here, on the lock its own thread holds).
#include <gtest/gtest.h>

#include <atomic>

#include "streamsafe/alloc/allocator_observer.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

struct reading_observer final : allocator_observer {
  caching_allocator* alloc = nullptr;
  std::atomic<int> calls{0};
  void read() {
    (void)alloc->stats();
    (void)alloc->snapshot_json();
    ++calls;
  }
  void on_allocate(void* ptr, std::size_t bytes, stream_id) override {
    EXPECT_GE(alloc->block_of(ptr).size, bytes);
    read();
  }
  void on_free(void*, std::size_t, stream_id) override { read(); }
  void on_record_stream(void* ptr, stream_id) override {
    (void)alloc->block_of(ptr);
    read();
  }
  void on_reuse(void*, std::size_t, stream_id, stream_id) override { read(); }
};

TEST(ObserverContract, CallbacksMayReadTheAllocator) {
  Device device = Device::sim(sim_options{.memory_capacity = 8 * mib});
  Stream a(device, stream_options{.name = "a"});
  Stream b(device, stream_options{.name = "b"});
  reading_observer observer;
  allocator_options options;
  options.segments = segment_kind::fixed;
  options.observer = &observer;
  caching_allocator alloc(device, options);
  observer.alloc = &alloc;
  void* p = alloc.allocate(6 * mib, a);
  alloc.record_stream(p, b);
  alloc.deallocate(p);
  alloc.process_pending_frees();
  alloc.deallocate(alloc.allocate(6 * mib, a));  // same-stream reuse
  void* lent = alloc.allocate(6 * mib, b);       // the device is full: a lends its block
  EXPECT_EQ(alloc.stats().num_cross_stream_reuses, 1u);
  alloc.deallocate(lent);
  EXPECT_EQ(observer.calls.load(), 8);  // three allocations, three frees, a record, a reuse
}

}  // namespace
}  // namespace streamsafe
