// The tracked allocator under `enforce` when the stream that used a block is already destroyed,
// and the allocator configurations it refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends.hpp"
#include "tracker_support.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/hazard/tracked_allocator.hpp"
#include "streamsafe/hazard/tracker.hpp"

namespace streamsafe::testing {
namespace {

using hazard::policy;
using ::testing::Each;
using ::testing::Eq;
using ::testing::HasSubstr;

// A side stream reads a block of the main stream's, its handle is destroyed with the read still
// queued (deterministic sim runs it only when the host waits), then the block is freed without
// record_stream. `enforce` must record the side stream anyway, so the block is not reused
// under the read.
TEST(TrackedAllocatorEnforce, RecordsAStreamWhoseHandleIsGoneBeforeTheBlockIsReused) {
  Device device = Device::sim();
  caching_allocator allocator(device, allocator_options{});
  hazard::tracker tracker(device, policy::enforce);
  hazard::tracked_allocator memory(allocator, tracker);
  Stream main(device, {.name = "main"});
  auto* seen = static_cast<std::uint32_t*>(device.allocate(bytes));
  auto* block = static_cast<std::uint32_t*>(memory.allocate(bytes, main));
  tracker.on(main).writes(block, bytes).launch(fill_kernel(block, count, 7));
  {
    Stream side(device, slow_stream("side"));
    side.wait(main);
    tracker.on(side).reads(block, bytes).writes(seen, bytes).launch(slow_copy_kernel(block, seen, count));
  }
  ASSERT_NO_THROW(memory.deallocate(block));
  EXPECT_EQ(tracker.inserted().record_streams, 1u);
  auto* next = static_cast<std::uint32_t*>(memory.allocate(bytes, main));
  tracker.on(main).writes(next, bytes).launch(fill_kernel(next, count, 99));
  device.synchronize();
  EXPECT_THAT(read_back(main, seen, count), Each(Eq(7u)));  // the side stream read the old bytes
  memory.deallocate(next);
  allocator.process_pending_frees();
  EXPECT_EQ(allocator.stats().allocated_bytes.current, 0);  // both blocks went back
  EXPECT_TRUE(tracker.hazards().empty());
  device.deallocate(seen);
}

// A block freed behind the engine's back comes out of the allocator again: the engine refuses
// the new lifetime (it still holds the old one), and the block must not stay allocated.
TEST(TrackedAllocatorErrors, ALifetimeTheEngineRefusesGoesBackToTheAllocator) {
  Device device = Device::sim();
  caching_allocator allocator(device, allocator_options{});
  hazard::tracker tracker(device, policy::report);
  hazard::tracked_allocator memory(allocator, tracker);
  Stream main(device, {.name = "main"});
  void* block = memory.allocate(bytes, main);
  allocator.deallocate(block);  // untracked free: the engine still holds the lifetime
  EXPECT_THROW((void)memory.allocate(bytes, main), usage_error);  // the same bytes, cached at once
  EXPECT_EQ(allocator.stats().allocated_bytes.current, 0);
}

TEST(TrackedAllocatorOptions, AcceptsEveryGrowthPolicy) {
  Device device = Device::sim();
  hazard::tracker tracker(device, policy::report);
  for (auto growth : {expandable_growth::remap, expandable_growth::map_new, expandable_growth::settle}) {
    caching_allocator allocator(device, allocator_options{.segments = segment_kind::expandable, .growth = growth});
    EXPECT_NO_THROW(hazard::tracked_allocator(allocator, tracker));
  }
  caching_allocator fixed(device, allocator_options{.segments = segment_kind::fixed});
  EXPECT_NO_THROW(hazard::tracked_allocator(fixed, tracker));
}

}  // namespace
}  // namespace streamsafe::testing
