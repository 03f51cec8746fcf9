// Eight threads on eight streams of a threaded sim device allocate, free (some of each other's
// blocks), and record streams; the books must balance at the end (ThreadSanitizer runs this).
#include <gtest/gtest.h>

#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe {
namespace {

void stress(const allocator_options& options) {
  constexpr int thread_count = 8;
  constexpr int rounds = 4000;
  Device device = Device::sim(sim_options{.memory_capacity = std::size_t{512} << 20, .mode = sim_mode::threaded});
  std::vector<Stream> streams;
  for (int i = 0; i < thread_count; ++i) streams.emplace_back(device);
  {
    caching_allocator alloc(device, options);
    std::mutex handoff_mutex;
    std::vector<void*> handoff;  // blocks one thread allocates and another frees
    auto work = [&](int index) {
      std::mt19937_64 rng(static_cast<std::uint64_t>(index));
      std::vector<void*> mine;
      for (int round = 0; round < rounds; ++round) {
        void* p = alloc.allocate(512 + rng() % (256 << 10), streams[static_cast<std::size_t>(index)]);
        if (rng() % 8 == 0) alloc.record_stream(p, streams[rng() % thread_count]);
        if (rng() % 4 == 0) {
          std::lock_guard lock(handoff_mutex);
          handoff.push_back(p);
        } else {
          mine.push_back(p);
        }
        if (mine.size() > 16) {
          alloc.deallocate(mine.front());
          mine.erase(mine.begin());
        }
        std::vector<void*> theirs;
        {
          std::lock_guard lock(handoff_mutex);
          if (handoff.size() > 8) theirs.swap(handoff);
        }
        for (void* q : theirs) alloc.deallocate(q);
      }
      for (void* q : mine) alloc.deallocate(q);
    };
    std::vector<std::thread> threads;
    for (int i = 0; i < thread_count; ++i) threads.emplace_back(work, i);
    for (auto& t : threads) t.join();
    for (void* q : handoff) alloc.deallocate(q);
    alloc.empty_cache();
    const allocator_stats s = alloc.stats();
    EXPECT_EQ(s.allocation.current, 0);
    EXPECT_EQ(s.allocation.allocated, static_cast<std::uint64_t>(thread_count * rounds));
    EXPECT_EQ(s.pending_free_blocks, 0);
    EXPECT_EQ(s.reserved_bytes.current, 0);
  }
  EXPECT_EQ(device.memory().free_bytes, device.memory().total_bytes);
}

TEST(AllocatorThreadStress, EightThreadsOnEightStreams) { stress(allocator_options{}); }

// Frees from other threads and borrowed blocks meet the dissolving and stitching of segments.
TEST(AllocatorThreadStress, EightThreadsOnEightStreamsWithStitchedSegments) {
  stress(allocator_options{.segments = segment_kind::expandable, .growth = expandable_growth::stitch});
}

}  // namespace
}  // namespace streamsafe
