// A randomized soak of over a million operations: allocations of mixed sizes on three streams,
// frees in random order, record_stream now and then. Invariants checked as it goes: no two live
// blocks overlap, in addresses and in memory (each block carries its own tag, written through
// its pointer and checked at its free: stitched segments map one chunk at several addresses,
// where a wrong piece would show as another block's tag), the statistics equal a recount, and at
// the end all memory is returned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe {
namespace {

struct live_block {
  void* ptr;
  std::size_t rounded;
  std::uint64_t tag;
};

// Tags at the block's start, end, and every 64 KiB between (a piece is never shorter than 512
// bytes, and segments change pieces at chunk boundaries, which these offsets cross).
template <typename Visit>
void for_each_tag_slot(const live_block& b, Visit visit) {
  auto* bytes = static_cast<unsigned char*>(b.ptr);
  for (std::size_t offset = 0; offset + sizeof(std::uint64_t) <= b.rounded; offset += 64 << 10) visit(bytes + offset);
  visit(bytes + b.rounded - sizeof(std::uint64_t));
}

void write_tags(const live_block& b) {
  for_each_tag_slot(b, [&](unsigned char* at) { std::memcpy(at, &b.tag, sizeof b.tag); });
}

void expect_tags(const live_block& b) {
  for_each_tag_slot(b, [&](unsigned char* at) {
    std::uint64_t seen = 0;
    std::memcpy(&seen, at, sizeof seen);
    ASSERT_EQ(seen, b.tag) << "block " << b.ptr << " was overwritten at offset " << (at - static_cast<unsigned char*>(b.ptr));
  });
}

std::size_t random_size(std::mt19937_64& rng) {
  switch (rng() % 4) {
    case 0: return 1 + rng() % 512;
    case 1: return 1 + rng() % (64 << 10);
    case 2: return 1 + rng() % (1 << 20);
    default: return (1 << 20) + rng() % (8 << 20);
  }
}

void expect_no_overlap(std::vector<live_block> live) {
  std::sort(live.begin(), live.end(), [](const live_block& x, const live_block& y) { return x.ptr < y.ptr; });
  for (std::size_t i = 1; i < live.size(); ++i) {
    ASSERT_LE(static_cast<char*>(live[i - 1].ptr) + live[i - 1].rounded, static_cast<char*>(live[i].ptr))
        << "blocks overlap";
  }
}

void soak(allocator_options options) {
  constexpr std::size_t operations = 1'100'000;
  constexpr std::size_t max_live = 200;
  Device device = Device::sim(sim_options{.memory_capacity = std::size_t{1} << 30});
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
        void* p = alloc.allocate(bytes, streams[rng() % streams.size()]);
        live.push_back({p, alloc.block_of(p).size, op + 1});
        write_tags(live.back());
        if (rng() % 16 == 0) alloc.record_stream(p, streams[rng() % streams.size()]);
      } else {
        const std::size_t victim = rng() % live.size();
        expect_tags(live[victim]);
        alloc.deallocate(live[victim].ptr);
        live[victim] = live.back();
        live.pop_back();
      }
      if (op % 50'000 == 0) {
        expect_no_overlap(live);
        std::int64_t recount = 0;
        for (const live_block& b : live) recount += static_cast<std::int64_t>(b.rounded);
        const allocator_stats s = alloc.stats();
        ASSERT_EQ(s.allocated_bytes.current, recount);
        ASSERT_EQ(s.allocation.current, static_cast<std::int64_t>(live.size()));
        ASSERT_GE(s.reserved_bytes.current, recount);
      }
    }
    for (const live_block& b : live) {
      expect_tags(b);
      alloc.deallocate(b.ptr);
    }
    alloc.empty_cache();
    const allocator_stats s = alloc.stats();
    EXPECT_EQ(s.allocated_bytes.current, 0);
    EXPECT_EQ(s.active_bytes.current, 0);
    EXPECT_EQ(s.pending_free_blocks, 0);
    EXPECT_EQ(s.reserved_bytes.current, 0);
  }
  EXPECT_EQ(device.memory().free_bytes, device.memory().total_bytes);
}

TEST(AllocatorSoak, FixedSegments) { soak({.segments = segment_kind::fixed}); }
TEST(AllocatorSoak, StitchedSegments) {
  soak({.segments = segment_kind::expandable, .growth = expandable_growth::stitch});
}
// Small windows as small as a request: the most pieces, the most chunks shared between windows.
TEST(AllocatorSoak, StitchedSegmentsWithSmallestWindows) {
  soak({.segments = segment_kind::expandable, .growth = expandable_growth::stitch, .small_window_bytes = 512});
}
TEST(AllocatorSoak, ExpandableSegments) { soak({.segments = segment_kind::expandable}); }
// Every growth that can move free chunks does: the chunk moves must keep live blocks apart.
TEST(AllocatorSoak, ExpandableSegmentsMovingEveryFreeChunk) {
  soak({.segments = segment_kind::expandable, .growth = expandable_growth::remap, .remap_slack_percent = 0});
}

}  // namespace
}  // namespace streamsafe
