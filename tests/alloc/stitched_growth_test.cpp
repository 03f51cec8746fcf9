// expandable_growth:stitch on the sim backend, whose physical chunks alias like a GPU's: segments
// share chunks without sharing bytes, dissolved segments give their bytes to the next one, and
// the out-of-memory ladder and empty_cache give everything back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe {
namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;

const allocator_options stitch{.segments = segment_kind::expandable, .growth = expandable_growth::stitch};

// On every backend: cuda maps one physical chunk at two addresses for real.
class StitchedSegments : public testing::BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (!IsSkipped()) stream_.emplace(device(), stream_options{.name = "stitched"});
  }
  StreamRef stream() { return *stream_; }
  /// Every byte of the block set to `value`, on the stream.
  void fill(void* p, std::size_t bytes, std::uint8_t value) { stream().fill(p, value, bytes); }
  /// Whether every byte of the block is `value`, read back after the stream's work.
  bool holds(const void* p, std::size_t bytes, std::uint8_t value) {
    std::vector<std::uint8_t> host(bytes);
    stream().copy(host.data(), p, bytes);
    stream().synchronize();
    return std::all_of(host.begin(), host.end(), [&](std::uint8_t b) { return b == value; });
  }

 private:
  std::optional<Stream> stream_;
};

TEST_P(StitchedSegments, ASegmentStartsInTheFreeEndOfAnotherSegmentsChunk) {
  caching_allocator alloc(device(), stitch);
  // 3 MiB: one chunk and half of a second; the second's free end is 1 MiB.
  void* first = alloc.allocate(3 * mib, stream());
  // 5 MiB: that free end, then two whole chunks. Four chunks in all, not five.
  void* second = alloc.allocate(5 * mib, stream());
  EXPECT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(8 * mib));
  // The bytes are distinct although a chunk is mapped in both windows.
  fill(first, 3 * mib, 0x11);
  fill(second, 5 * mib, 0x22);
  EXPECT_TRUE(holds(first, 3 * mib, 0x11));
  EXPECT_TRUE(holds(second, 5 * mib, 0x22));
  alloc.deallocate(first);
  alloc.deallocate(second);
}

TEST_P(StitchedSegments, AFreedSegmentsBytesServeTheNextSegmentWithoutNewChunks) {
  caching_allocator alloc(device(), stitch);
  void* kept = alloc.allocate(3 * mib, stream());
  void* freed = alloc.allocate(6 * mib, stream());
  const std::int64_t reserved = alloc.stats().reserved_bytes.current;  // 10 MiB: 1 MiB free end
  alloc.deallocate(freed);
  // Larger than the hole a contiguous range would have: it takes the dissolved segment's bytes
  // and the free end of kept's chunk, and needs one chunk more.
  void* larger = alloc.allocate(8 * mib, stream());
  EXPECT_EQ(alloc.stats().reserved_bytes.current, reserved + static_cast<std::int64_t>(2 * mib));
  fill(kept, 3 * mib, 0x33);
  fill(larger, 8 * mib, 0x44);
  EXPECT_TRUE(holds(kept, 3 * mib, 0x33));
  EXPECT_TRUE(holds(larger, 8 * mib, 0x44));
  alloc.deallocate(larger);
  alloc.deallocate(kept);
}

TEST_P(StitchedSegments, SameSizeReuseTakesTheCachedBlockAndASmallerRequestGetsItsOwnSegment) {
  caching_allocator alloc(device(), stitch);
  void* p = alloc.allocate(4 * mib, stream());
  alloc.deallocate(p);
  EXPECT_EQ(alloc.allocate(4 * mib, stream()), p);  // the fast path: cached, not dissolved
  alloc.deallocate(p);
  void* smaller = alloc.allocate(2 * mib, stream());  // not a split of the 4 MiB segment
  EXPECT_EQ(alloc.block_of(smaller).size, 2 * mib);
  alloc.deallocate(smaller);
}

TEST_P(StitchedSegments, ASegmentTakesOverTheDormantMappingOfItsChunks) {
  caching_allocator alloc(device(), stitch);
  void* first = alloc.allocate(4 * mib, stream());  // two chunks, one window
  alloc.deallocate(first);
  // Not a close fit: the 4 MiB segment is dissolved, and one of its chunks serves this one,
  // in the slot where the old window maps it.
  void* second = alloc.allocate(2 * mib, stream());
  const auto offset = static_cast<char*>(second) - static_cast<char*>(first);
  EXPECT_TRUE(offset == 0 || offset == static_cast<std::ptrdiff_t>(2 * mib)) << offset;
  fill(second, 2 * mib, 0x77);
  EXPECT_TRUE(holds(second, 2 * mib, 0x77));
  alloc.deallocate(second);
}

TEST_P(StitchedSegments, ARandomMixKeepsEveryBlocksBytesItsOwn) {
  caching_allocator alloc(device(), stitch);
  std::mt19937_64 rng(7);
  struct tagged {
    void* ptr;
    std::size_t bytes;
    std::uint8_t value;
  };
  std::vector<tagged> live;
  for (int op = 0; op < 400; ++op) {
    if (live.size() < 24 && (live.empty() || rng() % 2 == 0)) {
      const std::size_t bytes = rng() % 3 == 0 ? 512 + rng() % (256 * kib) : 512 + rng() % (5 * mib);
      const auto value = static_cast<std::uint8_t>(1 + op % 255);
      live.push_back({alloc.allocate(bytes, stream()), bytes, value});
      fill(live.back().ptr, bytes, value);
    } else {
      const std::size_t victim = rng() % live.size();
      ASSERT_TRUE(holds(live[victim].ptr, live[victim].bytes, live[victim].value)) << "op " << op;
      alloc.deallocate(live[victim].ptr);
      live[victim] = live.back();
      live.pop_back();
    }
  }
  for (const tagged& t : live) {
    EXPECT_TRUE(holds(t.ptr, t.bytes, t.value));
    alloc.deallocate(t.ptr);
  }
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes.current, 0);
  EXPECT_EQ(alloc.stats().segment.current, 0);
}

STREAMSAFE_ALL_BACKENDS(StitchedSegments);

// Sim only below: a small device to run out of, and a stream that can be held back.
struct StitchedGrowth : ::testing::Test {
  Device device = Device::sim(sim_options{.memory_capacity = 64 * mib});
  Stream stream{device, stream_options{.name = "s"}};
  allocator_options options = stitch;
};

void fill(void* p, std::size_t bytes, unsigned char value) { std::memset(p, value, bytes); }

bool all_equal(const void* p, std::size_t bytes, unsigned char value) {
  const auto* at = static_cast<const unsigned char*>(p);
  return std::all_of(at, at + bytes, [&](unsigned char b) { return b == value; });
}

TEST_F(StitchedGrowth, EmptyCacheReturnsEveryChunkToTheDevice) {
  {
    caching_allocator alloc(device, options);
    std::vector<void*> live;
    for (std::size_t i = 1; i <= 20; ++i) live.push_back(alloc.allocate(i * 300 * kib, stream));
    for (void* p : live) alloc.deallocate(p);
    alloc.empty_cache();
    const allocator_stats s = alloc.stats();
    EXPECT_EQ(s.reserved_bytes.current, 0);
    EXPECT_EQ(s.segment.current, 0);
    EXPECT_EQ(s.num_device_alloc, s.num_device_free);
    EXPECT_EQ(device.memory().free_bytes, device.memory().total_bytes);
    void* again = alloc.allocate(1 * mib, stream);  // usable after
    alloc.deallocate(again);
  }
  EXPECT_EQ(device.memory().free_bytes, device.memory().total_bytes);
}

TEST_F(StitchedGrowth, OutOfMemoryNamesTheFiguresAndLeavesTheAllocatorUsable) {
  caching_allocator alloc(device, options);
  void* big = alloc.allocate(40 * mib, stream);
  try {
    (void)alloc.allocate(30 * mib, stream);
    FAIL() << "64 MiB device held 40 MiB; 30 more cannot fit";
  } catch (const out_of_memory& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot allocate 31457280 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("largest free block"), std::string::npos) << what;
  }
  EXPECT_EQ(alloc.stats().num_ooms, 1u);
  // The chunks created before the device ran out were given back, not kept half-stitched.
  EXPECT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(40 * mib));
  void* fits = alloc.allocate(20 * mib, stream);
  fill(fits, 20 * mib, 0x55);
  fill(big, 40 * mib, 0x66);
  EXPECT_TRUE(all_equal(fits, 20 * mib, 0x55));
  alloc.deallocate(big);
  alloc.deallocate(fits);
  // With the 40 MiB freed, 60 MiB fits: the ladder dissolves and releases what it must.
  void* most = alloc.allocate(60 * mib, stream);
  alloc.deallocate(most);
}

TEST_F(StitchedGrowth, ABlockFreedOnAnotherStreamsRecordIsHeldThenReused) {
  Stream reader{device, stream_options{.name = "reader", .pacing = sim_pacing::starved}};
  caching_allocator alloc(device, options);
  void* p = alloc.allocate(3 * mib, stream);
  alloc.record_stream(p, reader);
  alloc.deallocate(p);
  EXPECT_EQ(alloc.stats().pending_free_blocks, 1);
  reader.synchronize();
  alloc.process_pending_frees();
  EXPECT_EQ(alloc.stats().pending_free_blocks, 0);
  EXPECT_EQ(alloc.allocate(3 * mib, stream), p);
  alloc.deallocate(p);
}

TEST_F(StitchedGrowth, AStreamBorrowsAStitchedSegmentCachedByAnotherWhenTheDeviceIsFull) {
  Stream other{device, stream_options{.name = "other"}};
  caching_allocator alloc(device, options);
  void* cached = alloc.allocate(40 * mib, stream);
  alloc.deallocate(cached);  // cached by s; 24 MiB of the device left
  void* borrowed = alloc.allocate(40 * mib, other);
  EXPECT_EQ(borrowed, cached);
  EXPECT_EQ(alloc.stats().num_cross_stream_reuses, 1u);
  alloc.deallocate(borrowed);  // held until other's work is done, then home to s
  other.synchronize();
  alloc.process_pending_frees();
  EXPECT_EQ(alloc.stats().pending_free_blocks, 0);
  EXPECT_EQ(alloc.allocate(40 * mib, stream), cached);
  alloc.deallocate(cached);
}

TEST_F(StitchedGrowth, SnapshotMarksStitchedSegments) {
  caching_allocator alloc(device, options);
  void* p = alloc.allocate(3 * mib, stream);
  const std::string json = alloc.snapshot_json();
  EXPECT_NE(json.find("\"stitched\":true"), std::string::npos) << json;
  alloc.deallocate(p);
}

}  // namespace
}  // namespace streamsafe
