// Eight threads on eight streams of a threaded sim device allocate, free (some of each other's
// blocks), and record streams, with device work on every block (block_tags.hpp): a tag written
// on its stream when handed out, checked by the streams recorded on it and, in stream order,
// just before its free. No tag may ever be wrong, and the books must balance at the end
// (ThreadSanitizer runs this).
#include <gtest/gtest.h>

#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "block_tags.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe {
namespace {

using testing::tagged_block;

struct owned_block {
  tagged_block tags;
  std::size_t stream;
};

void stress(const allocator_options& options) {
  constexpr int thread_count = 8;
  constexpr int rounds = 4000;
  Device device = Device::sim(sim_options{.memory_capacity = std::size_t{512} << 20, .mode = sim_mode::threaded});
  testing::tag_failures failures;  // before the streams: their queued checks report here
  std::vector<Stream> streams;
  for (int i = 0; i < thread_count; ++i) streams.emplace_back(device);
  {
    caching_allocator alloc(device, options);
    const auto release = [&](const owned_block& b) {
      streams[b.stream].launch(testing::check_tags(b.tags, failures));
      alloc.deallocate(b.tags.ptr);
    };
    std::mutex handoff_mutex;
    std::vector<owned_block> handoff;  // blocks one thread allocates and another frees
    auto work = [&](int index) {
      std::mt19937_64 rng(static_cast<std::uint64_t>(index));
      const auto own = static_cast<std::size_t>(index);
      std::vector<owned_block> mine;
      for (int round = 0; round < rounds; ++round) {
        void* p = alloc.allocate(512 + rng() % (256 << 10), streams[own]);
        const owned_block fresh{{p, alloc.block_of(p).size, (std::uint64_t{own} << 32) | unsigned(round)}, own};
        streams[own].launch(testing::write_tags(fresh.tags));
        if (rng() % 8 == 0) {  // a reader on another stream, after the owner's write
          Stream& reader = streams[rng() % thread_count];
          reader.wait(streams[own]);
          reader.launch(testing::check_tags(fresh.tags, failures));
          alloc.record_stream(p, reader);
        }
        if (rng() % 4 == 0) {
          std::lock_guard lock(handoff_mutex);
          handoff.push_back(fresh);
        } else {
          mine.push_back(fresh);
        }
        if (mine.size() > 16) {
          release(mine.front());
          mine.erase(mine.begin());
        }
        std::vector<owned_block> theirs;
        {
          std::lock_guard lock(handoff_mutex);
          if (handoff.size() > 8) theirs.swap(handoff);
        }
        for (const owned_block& b : theirs) release(b);
      }
      for (const owned_block& b : mine) release(b);
    };
    std::vector<std::thread> threads;
    for (int i = 0; i < thread_count; ++i) threads.emplace_back(work, i);
    for (auto& t : threads) t.join();
    for (const owned_block& b : handoff) release(b);
    alloc.empty_cache();
    device.synchronize();
    EXPECT_EQ(failures.count(), 0u) << failures.first();
    const allocator_stats s = alloc.stats();
    EXPECT_EQ(s.allocation.current, 0);
    EXPECT_EQ(s.allocation.allocated, static_cast<std::uint64_t>(thread_count * rounds));
    EXPECT_EQ(s.pending_free_blocks, 0);
    EXPECT_EQ(s.reserved_bytes.current, 0);
  }
  EXPECT_EQ(device.memory().free_bytes, device.memory().total_bytes);
}

TEST(AllocatorThreadStress, EightThreadsOnEightStreams) { stress(allocator_options{}); }

}  // namespace
}  // namespace streamsafe
