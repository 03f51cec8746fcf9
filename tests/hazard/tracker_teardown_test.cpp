// The tracker on paths that cannot throw: a stream's destruction reaches the tracker, which may
// query the streams it kept; a failing query there (sim fault seam) is reported, not fatal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "alloc/sim_faults.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/hazard/tracker.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::testing {
namespace {

using ::testing::HasSubstr;

TEST(TrackerTeardown, AFailedQueryOfAKeptStreamDuringAStreamsDestructionIsReported) {
  Device device = Device::sim();
  hazard::tracker tracker(device, hazard::policy::report);
  ::testing::internal::CaptureStderr();
  // The tracker keeps destroyed streams and, once it keeps 64, queries them at the next
  // destruction to let the idle ones go.
  for (int i = 0; i < 80; ++i) {
    Stream brief(device, {.name = "brief"});
    if (i == 64) detail::sim_faults().stream_queries.arm(0, 1);
  }
  detail::sim_faults().stream_queries.arm(0, 0);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("query of destroyed stream"));
  EXPECT_NO_THROW(device.synchronize());
}

}  // namespace
}  // namespace streamsafe::testing
