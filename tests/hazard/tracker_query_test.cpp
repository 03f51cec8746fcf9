// A successful query is a host synchronization with what it observed: a polling loop followed by
// a host read of the copy's destination is correct, and the tracker must say so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "backends.hpp"
#include "tracker_support.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/hazard/tracker.hpp"

namespace streamsafe::testing {
namespace {

using hazard::hazard_kind;
using hazard::policy;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::IsEmpty;

/// A starved stream fills device memory, records `filled`, and copies the bytes to pinned
/// memory; `wait_for_copy` is how the host learns the copy is done; then the host reads the
/// pinned bytes. Returns what it read.
std::vector<std::uint32_t> copy_then_host_read(Device& device, hazard::tracker& tracker,
                                               const std::function<void(Stream&, Event& filled)>& wait_for_copy) {
  Stream copier(device, slow_stream("copier"));
  auto* on_device = static_cast<std::uint32_t*>(device.allocate(bytes));
  auto* on_host = static_cast<std::uint32_t*>(device.allocate_pinned(bytes));
  std::fill(on_host, on_host + count, 0u);
  tracker.on(copier).writes(on_device, bytes).launch(fill_kernel(on_device, count, 3));
  Event filled(device);
  filled.record(copier);
  tracker.on(copier).copy(on_host, on_device, bytes);
  wait_for_copy(copier, filled);
  tracker.host_reads(on_host, bytes);
  std::vector<std::uint32_t> values(on_host, on_host + count);
  copier.synchronize();
  device.deallocate_pinned(on_host);
  device.deallocate(on_device);
  return values;
}

class HazardTrackerQuery : public BackendTest {};

TEST_P(HazardTrackerQuery, PollingAnEventRecordedAfterTheCopyThenReadingIsClean) {
  hazard::tracker tracker(device(), policy::report);
  auto values = copy_then_host_read(device(), tracker, [&](Stream& copier, Event&) {
    Event copied(device());
    copied.record(copier);
    while (!copied.query()) {
    }
  });
  EXPECT_THAT(values, Each(Eq(3u)));
  EXPECT_THAT(kinds(tracker), IsEmpty());
}

TEST_P(HazardTrackerQuery, PollingTheStreamThenReadingIsClean) {
  hazard::tracker tracker(device(), policy::report);
  auto values = copy_then_host_read(device(), tracker, [](Stream& copier, Event&) {
    while (!copier.query()) {
    }
  });
  EXPECT_THAT(values, Each(Eq(3u)));
  EXPECT_THAT(kinds(tracker), IsEmpty());
}

// What the two tests above must not hide: without a wait, the same read is a host race.
TEST_P(HazardTrackerQuery, ReadingWithoutWaitingIsAHostRace) {
  hazard::tracker tracker(device(), policy::report);
  (void)copy_then_host_read(device(), tracker, [](Stream&, Event&) {});
  EXPECT_THAT(kinds(tracker), ElementsAre(hazard_kind::host_race));
}

// A query covers only what it observed: the event's capture, which ends before the copy.
TEST_P(HazardTrackerQuery, PollingAnEventRecordedBeforeTheCopyDoesNotCoverIt) {
  hazard::tracker tracker(device(), policy::report);
  (void)copy_then_host_read(device(), tracker, [](Stream&, Event& filled) {
    while (!filled.query()) {
    }
  });
  EXPECT_THAT(kinds(tracker), ElementsAre(hazard_kind::host_race));
}

INSTANTIATE_TEST_SUITE_P(Backends, HazardTrackerQuery,
                         ::testing::Values(test_backend::sim_deterministic, test_backend::sim_threaded),
                         backend_test_name);

}  // namespace
}  // namespace streamsafe::testing
