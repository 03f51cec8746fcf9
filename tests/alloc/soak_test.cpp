// A randomized soak of over a million operations: allocations of mixed sizes on three streams,
// frees in random order, record_stream now and then, with device work on every block (see
// block_tags.hpp): a tag written on its stream when it is handed out, checked by the streams
// recorded on it and, in stream order, just before its free. The device runs a seeded few ops
// at each call, so work is still queued at most frees, reuses and unmaps. Invariants checked as
// it goes: no two live blocks overlap, the statistics equal a recount, no tag is ever wrong,
// and at the end all memory is returned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "block_tags.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe {
namespace {

using testing::tagged_block;

struct live_block {
  tagged_block tags;
  std::size_t stream;
};

std::size_t random_size(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0: return 1 + rng() % 512;
    case 1: return 1 + rng() % (64 << 10);
    case 2: return 1 + rng() % (1 << 20);
    default: return (1 << 20) + rng() % (8 << 20);
  }
}

void expect_no_overlap(std::vector<live_block> live) {
  std::sort(live.begin(), live.end(), [](const live_block& x, const live_block& y) { return x.tags.ptr < y.tags.ptr; });
  for (std::size_t i = 1; i < live.size(); ++i) {
    ASSERT_LE(static_cast<char*>(live[i - 1].tags.ptr) + live[i - 1].tags.rounded, static_cast<char*>(live[i].tags.ptr))
        << "blocks overlap";
  }
}

void soak(allocator_options options) {
  constexpr std::size_t operations = 1'100'000;
  constexpr std::size_t max_live = 200;
  Device device = Device::sim(sim_options{.memory_capacity = std::size_t{1} << 30, .max_background_steps = 3});
  testing::tag_failures failures;  // before the streams: their queued checks report here
  std::vector<Stream> streams;
  for (int i = 0; i < 3; ++i) streams.emplace_back(device);
  {
    caching_allocator alloc(device, options);
    std::mt19937_64 rng(42);
    std::vector<live_block> live;
    for (std::size_t op = 0; op < operations; ++op) {
      const bool grow = live.empty() || (live.size() < max_live && rng() % 2 == 0);
      if (grow) {
        const std::size_t bytes = random_size(rng);
        const std::size_t owner = rng() % streams.size();
        void* p = alloc.allocate(bytes, streams[owner]);
        const live_block fresh{{p, alloc.block_of(p).size, op + 1}, owner};
        live.push_back(fresh);
        streams[owner].launch(testing::write_tags(fresh.tags));
        if (rng() % 16 == 0) {  // a reader on another stream, after the owner's write
          Stream& reader = streams[rng() % streams.size()];
          reader.wait(streams[owner]);
          reader.launch(testing::check_tags(fresh.tags, failures));
          alloc.record_stream(p, reader);
        }
      } else {
        const std::size_t victim = rng() % live.size();
        streams[live[victim].stream].launch(testing::check_tags(live[victim].tags, failures));
        alloc.deallocate(live[victim].tags.ptr);
        live[victim] = live.back();
        live.pop_back();
      }
      if (op % 50'000 == 0) {
        expect_no_overlap(live);
        std::int64_t recount = 0;
        for (const live_block& b : live) recount += static_cast<std::int64_t>(b.tags.rounded);
        const allocator_stats s = alloc.stats();
        ASSERT_EQ(s.allocated_bytes.current, recount);
        ASSERT_EQ(s.allocation.current, static_cast<std::int64_t>(live.size()));
        ASSERT_GE(s.reserved_bytes.current, recount);
      }
    }
    for (const live_block& b : live) {
      streams[b.stream].launch(testing::check_tags(b.tags, failures));
      alloc.deallocate(b.tags.ptr);
    }
    alloc.empty_cache();
    device.synchronize();
    EXPECT_EQ(failures.count(), 0u) << failures.first();
    const allocator_stats s = alloc.stats();
    EXPECT_EQ(s.allocated_bytes.current, 0);
    EXPECT_EQ(s.active_bytes.current, 0);
    EXPECT_EQ(s.pending_free_blocks, 0);
    EXPECT_EQ(s.reserved_bytes.current, 0);
  }
  EXPECT_EQ(device.memory().free_bytes, device.memory().total_bytes);
}

TEST(AllocatorSoak, FixedSegments) { soak({.segments = segment_kind::fixed}); }
TEST(AllocatorSoak, ExpandableSegments) { soak({.segments = segment_kind::expandable}); }
// Every growth that can move free chunks does: the chunk moves must keep live blocks apart.
TEST(AllocatorSoak, ExpandableSegmentsMovingEveryFreeChunk) {
  soak({.segments = segment_kind::expandable, .growth = expandable_growth::remap, .remap_slack_percent = 0});
}

}  // namespace
}  // namespace streamsafe
