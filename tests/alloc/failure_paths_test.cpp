// Device calls that fail while the allocator gives memory back or grows (injected through the
// sim memory source's test seam, alloc/sim_faults.hpp): the books must still say what the device
// holds, so that a retry gives everything back and nothing is mapped twice or forgotten.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "alloc/sim_faults.hpp"
#include "backends.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe {
namespace {

using testing::read_back;
using testing::slow_stream;

constexpr std::size_t mib = std::size_t{1} << 20;

struct FailurePaths : ::testing::Test {
  void TearDown() override {
    detail::sim_memory_faults& faults = detail::sim_faults();
    for (detail::sim_fault* f : {&faults.unmaps, &faults.maps, &faults.frees}) f->arm(0, 0);
  }
  Device device = Device::sim(sim_options{.memory_capacity = 64 * mib});
  Stream s{device, stream_options{.name = "s"}};
};

allocator_options with_segments(segment_kind kind) {
  allocator_options options;
  options.segments = kind;
  return options;
}

void expect_usable(caching_allocator& alloc, StreamRef stream, std::size_t bytes) {
  auto* p = static_cast<std::uint32_t*>(alloc.allocate(bytes, stream));
  stream.fill(p, 0x3C, bytes);
  const std::vector<std::uint32_t> words = read_back(stream, p, bytes / 4);
  std::size_t wrong = 0;
  for (const std::uint32_t w : words) wrong += w != 0x3C3C3C3Cu ? 1 : 0;
  EXPECT_EQ(wrong, 0u);
  alloc.deallocate(p);
}

TEST_F(FailurePaths, FailedUnmapLeavesTheChunkMappedAndKnown) {
  caching_allocator alloc(device, with_segments(segment_kind::expandable));
  alloc.deallocate(alloc.allocate(4 * mib, s));  // two chunks, cached
  detail::sim_faults().unmaps.arm(0, 1);
  EXPECT_THROW(alloc.empty_cache(), cuda_error);
  EXPECT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(4 * mib))
      << "a chunk whose unmap failed is still held";
  expect_usable(alloc, s, 4 * mib);
  EXPECT_NO_THROW(alloc.empty_cache()) << "the retry must unmap the chunk the failed call left mapped";
  EXPECT_EQ(alloc.stats().reserved_bytes.current, 0);
}

TEST_F(FailurePaths, AFailedUnmapOfOneRunLeavesTheRunsBeforeItGivenBackAndItsOwnKnown) {
  allocator_options options = with_segments(segment_kind::expandable);
  options.repeat_plan = false;
  caching_allocator alloc(device, options);
  void* first = alloc.allocate(4 * mib, s);  // chunks 0-1
  void* kept = alloc.allocate(2 * mib, s);   // chunk 2, live: it splits the free chunks into two runs
  void* last = alloc.allocate(4 * mib, s);   // chunks 3-4
  alloc.deallocate(first);
  alloc.deallocate(last);
  detail::sim_faults().unmaps.arm(1, 1);  // the first run's unmap passes, the second's fails
  EXPECT_THROW(alloc.empty_cache(), cuda_error);
  detail::sim_faults().unmaps.arm(0, 0);
  EXPECT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(6 * mib))
      << "the second run and the live chunk are still held, the first run went";
  expect_usable(alloc, s, 4 * mib);
  EXPECT_NO_THROW(alloc.empty_cache());
  EXPECT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(2 * mib));
  alloc.deallocate(kept);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes.current, 0);
}

TEST_F(FailurePaths, AFailedUnmapOfAnotherStreamsChunkDoesNotFailTheGrowth) {
  // remap takes another stream's free chunks when a stream climbs past its peak; that is
  // thrift, not need: the device has room, so the allocation maps new chunks instead.
  Stream t{device, stream_options{.name = "t"}};
  allocator_options options = with_segments(segment_kind::expandable);
  options.repeat_plan = false;
  caching_allocator alloc(device, options);
  alloc.deallocate(alloc.allocate(8 * mib, t));
  detail::sim_faults().unmaps.arm(0, 1);
  void* p = nullptr;
  ASSERT_NO_THROW(p = alloc.allocate(8 * mib, s));
  alloc.deallocate(p);
  detail::sim_faults().unmaps.arm(0, 0);
  expect_usable(alloc, t, 8 * mib);
  expect_usable(alloc, s, 8 * mib);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes.current, 0) << "a chunk the failed unmap left mapped is still known";
}

TEST_F(FailurePaths, FailedMapMidGrowthGivesBackWhatItTook) {
  caching_allocator alloc(device, with_segments(segment_kind::expandable));
  detail::sim_faults().maps.arm(1, 1);  // the first chunk maps, the second fails
  EXPECT_THROW((void)alloc.allocate(6 * mib, s), cuda_error);
  const allocator_stats after = alloc.stats();
  EXPECT_EQ(after.reserved_bytes.current, 0) << "the chunk mapped before the failure must go back";
  EXPECT_EQ(after.segment.current, 0) << "the range reserved for the request must go back";
  EXPECT_EQ(after.allocated_bytes.current, 0);
  expect_usable(alloc, s, 6 * mib);
}

TEST_F(FailurePaths, FailedMapInAKeptRangeUnmapsItsNewChunks) {
  caching_allocator alloc(device, with_segments(segment_kind::expandable));
  void* kept = alloc.allocate(2 * mib, s);  // the range stays: a live block holds it
  detail::sim_faults().maps.arm(1, 1);
  EXPECT_THROW((void)alloc.allocate(6 * mib, s), cuda_error);
  EXPECT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(2 * mib));
  expect_usable(alloc, s, 6 * mib);
  alloc.deallocate(kept);
}

// The block a failed growth had placed is free again and must not stay listed as live: a free at
// its address is refused, and a later block placed there is the one its free finds.
TEST_F(FailurePaths, FailedGrowthLeavesNothingLiveAtItsAddress) {
  caching_allocator alloc(device, with_segments(segment_kind::expandable));
  void* kept = alloc.allocate(2 * mib, s);  // the failed block goes right after it
  detail::sim_faults().maps.arm(1, 1);
  EXPECT_THROW((void)alloc.allocate(6 * mib, s), cuda_error);
  void* where_it_was = static_cast<char*>(kept) + 2 * mib;
  EXPECT_THROW(alloc.deallocate(where_it_was), usage_error) << "the failed growth's block is still listed";
  alloc.deallocate(kept);
  expect_usable(alloc, s, 6 * mib);
}

TEST_F(FailurePaths, FailedFreeOfASegmentKeepsItInThePool) {
  caching_allocator alloc(device, with_segments(segment_kind::fixed));
  alloc.deallocate(alloc.allocate(mib, s));
  const std::int64_t reserved = alloc.stats().reserved_bytes.current;
  detail::sim_faults().frees.arm(0, 1);
  EXPECT_THROW(alloc.empty_cache(), cuda_error);
  EXPECT_EQ(alloc.stats().reserved_bytes.current, reserved);
  EXPECT_EQ(alloc.stats().segment.current, 1);
  expect_usable(alloc, s, mib);  // served from the segment the pool still knows
  EXPECT_EQ(alloc.stats().segment.current, 1);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes.current, 0) << "the retry must free the segment";
}

// Releasing cached memory gives a segment back only after the work its stream enqueued before the
// free is done: here a starved fill still runs when empty_cache is called, and the device hands
// the same arena bytes to the next allocation.
TEST_F(FailurePaths, ReleaseWaitsForTheStreamBeforeFreeingASegment) {
  caching_allocator alloc(device, with_segments(segment_kind::fixed));
  Stream late(device, slow_stream("late"));
  void* p = alloc.allocate(mib, late);
  late.fill(p, 0xAB, mib);  // in flight: late is starved
  alloc.deallocate(p);
  alloc.empty_cache();
  auto* q = static_cast<std::uint32_t*>(device.allocate(2 * mib));
  s.fill(q, 0x11, 2 * mib);
  device.synchronize();  // the late fill lands now, if it had not before the release
  const std::vector<std::uint32_t> words = read_back(s, q, 2 * mib / 4);
  std::size_t wrong = 0;
  for (const std::uint32_t w : words) wrong += w != 0x11111111u ? 1 : 0;
  EXPECT_EQ(wrong, 0u) << "a segment was freed while its stream's work could still write it";
  device.deallocate(q);
}

// The destructor waits for the streams whose cached memory work may still use, not the device:
// a stream the allocator never served keeps its work queued.
TEST_F(FailurePaths, DestructorSynchronizesOnlyStreamsWithCachedMemory) {
  Stream busy(device, slow_stream("busy"));
  std::vector<std::uint32_t> host(1024, 0);
  auto* p = static_cast<std::uint32_t*>(device.allocate(host.size() * 4));
  busy.fill(p, 0x77, host.size() * 4);
  {
    caching_allocator alloc(device);
    alloc.deallocate(alloc.allocate(mib, s));
  }
  EXPECT_FALSE(busy.query()) << "the allocator's destructor waited for a stream it never used";
  busy.synchronize();
  device.deallocate(p);
}

}  // namespace
}  // namespace streamsafe
