// Streams and events that come and go leave the tracker's model: a server that makes a stream and
// an event per request keeps the engine's clocks and event table at the size of what is alive.
#include <gtest/gtest.h>

#include <cstdint>

#include "backends.hpp"
#include "tracker_support.hpp"
#include "streamsafe/event.hpp"
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

}  // namespace
}  // namespace streamsafe::testing
