// Streams and events that come and go leave the tracker's model: a server that makes a stream and
// an event per request keeps the engine's clocks and event table at the size of what is alive.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <cstdint>

#include "backends.hpp"
#include "tracker_support.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/hazard/tracked_allocator.hpp"
#include "streamsafe/hazard/tracker.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::testing {
namespace {

constexpr int requests = 2000;

TEST(TrackerBounded, ShortLivedStreamsAndEventsLeaveTheModel) {
  Device device = Device::sim();
  hazard::tracker tracker(device, hazard::policy::report);
  auto* buffer = static_cast<std::uint32_t*>(device.allocate(bytes));
  for (int i = 0; i < requests; ++i) {
    Stream request(device, {.name = "request"});
    tracker.on(request).writes(buffer, bytes).launch(fill_kernel(buffer, count, static_cast<std::uint32_t>(i)));
    Event done(device);
    done.record(request);
    done.synchronize();  // the host has seen the request's work finish: its slot may be reused
  }
  EXPECT_TRUE(tracker.hazards().empty());
  EXPECT_LT(tracker.stream_slots(), 16u) << "destroyed streams keep their slots in every clock";
  EXPECT_LT(tracker.events_tracked(), 16u) << "destroyed events keep their clocks";
  device.deallocate(buffer);
}

// A stream per request under the tracked allocator: each allocates, uses and frees a block, every
// fourth also lends it to a long-lived stream (record_stream, whose read is still queued at the
// free; it drains now and then), and the response is read back. The allocator queries and fences the gone streams to
// retire their pools; the tracker must not take those streams back (its share would keep every
// pool from retiring, and each would keep a slot in every clock).
TEST(TrackerBounded, AStreamPerRequestUnderTheTrackedAllocatorRetiresItsPools) {
  Device device = Device::sim();
  caching_allocator allocator(device, allocator_options{});
  hazard::tracker tracker(device, hazard::policy::enforce);
  hazard::tracked_allocator memory(allocator, tracker);
  Stream lender(device, slow_stream("lender"));
  auto* seen = static_cast<std::uint32_t*>(device.allocate(bytes));
  std::size_t most_slots = 0;
  std::int64_t most_segments = 0;
  std::int64_t most_reserved = 0;
  for (int i = 0; i < requests; ++i) {
    Stream request(device, {.name = "request"});
    auto* block = static_cast<std::uint32_t*>(memory.allocate(bytes, request));
    tracker.on(request).writes(block, bytes).launch(fill_kernel(block, count, static_cast<std::uint32_t>(i)));
    if (i % 4 == 0) {
      lender.wait(request);
      tracker.on(lender).reads(block, bytes).writes(seen, bytes).launch(slow_copy_kernel(block, seen, count));
      memory.record_stream(block, lender);
    }
    memory.deallocate(block);
    request.synchronize();  // the response is back
    if (i % 16 == 15) lender.synchronize();  // now and then the lender's queue drains
    most_slots = std::max(most_slots, tracker.stream_slots());
    most_segments = std::max(most_segments, allocator.stats().segment.current);
    most_reserved = std::max(most_reserved, allocator.stats().reserved_bytes.current);
  }
  EXPECT_THAT(tracker.hazards(), ::testing::IsEmpty());
  EXPECT_LT(most_slots, 128u) << "streams the allocator queried or fenced after their end took slots again";
  EXPECT_LT(most_segments, 64) << "pools of gone streams were not retired";
  EXPECT_LT(most_reserved, std::int64_t{128} << 20);
  std::cout << "[ measured ] " << requests << " request streams: most stream slots " << most_slots
            << ", most segments " << most_segments << ", most reserved " << (most_reserved >> 20) << " MiB\n";
  device.synchronize();
  device.deallocate(seen);
}

}  // namespace
}  // namespace streamsafe::testing
