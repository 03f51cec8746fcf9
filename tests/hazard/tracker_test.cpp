// The engine on a live sim device: both bugs reported by `report`, made correct by `enforce`
// under many seeds, and the environment switch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends.hpp"
#include "tracker_support.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/hazard/report_text.hpp"
#include "streamsafe/alloc/device_buffer.hpp"
#include "streamsafe/hazard/tracked_allocator.hpp"
#include "streamsafe/hazard/tracker.hpp"

namespace streamsafe::testing {
namespace {

using hazard::hazard_kind;
using hazard::policy;
using ::testing::Each;
using ::testing::Eq;
using ::testing::HasSubstr;

/// Producer/consumer with the wait forgotten; returns the consumer's output.
std::vector<std::uint32_t> missing_wait_program(Device& device, hazard::tracker& tracker) {
  Stream producer(device, slow_stream("producer"));
  Stream consumer(device, {.name = "consumer"});
  auto* in = static_cast<std::uint32_t*>(device.allocate(bytes));
  auto* out = static_cast<std::uint32_t*>(device.allocate(bytes));
  std::fill(in, in + count, 0xdead);
  tracker.on(producer).writes(in, bytes).launch(slow_fill_kernel(in, count, 4));
  tracker.on(consumer).reads(in, bytes).writes(out, bytes).launch(double_kernel(in, out, count));
  auto values = read_back(consumer, out, count);
  device.synchronize();
  device.deallocate(in);
  device.deallocate(out);
  return values;
}

TEST(HazardTracker, ReportNamesTheMissingWaitAndTheFix) {
  Device device = Device::sim();
  hazard::tracker tracker(device, policy::report);
  auto output = missing_wait_program(device, tracker);
  EXPECT_THAT(output, ::testing::Not(Each(Eq(8u))));  // report changes nothing: still corrupted
  ASSERT_EQ(kinds(tracker), std::vector<hazard_kind>{hazard_kind::race});
  const auto text = hazard::describe(tracker.hazards()[0]);
  EXPECT_THAT(text, HasSubstr("`double` on `consumer`"));
  EXPECT_THAT(text, HasSubstr("`slow_fill` on `producer`"));
  EXPECT_THAT(text, HasSubstr("tracker_test.cpp:"));
  EXPECT_THAT(hazard::fix_text(tracker.hazards()[0]),
              HasSubstr("make stream `consumer` wait on an event recorded on `producer` after `slow_fill`"));
}

TEST(HazardTracker, EnforceMakesTheBuggyProgramCorrectUnderEverySeed) {
  for (std::uint64_t seed = 1; seed <= 25; ++seed) {
    Device device = Device::sim({.seed = seed});
    hazard::tracker tracker(device, policy::enforce);
    EXPECT_THAT(missing_wait_program(device, tracker), Each(Eq(8u))) << "seed " << seed;
    EXPECT_EQ(tracker.inserted().stream_waits, 1u);
    EXPECT_TRUE(tracker.hazards().empty());
  }
}

TEST(HazardTracker, TheProgramWithItsWaitIsClean) {
  Device device = Device::sim();
  hazard::tracker tracker(device, policy::report);
  Stream producer(device, slow_stream("producer"));
  Stream consumer(device, {.name = "consumer"});
  auto* data = static_cast<std::uint32_t*>(device.allocate(bytes));
  tracker.on(producer).writes(data, bytes).launch(slow_fill_kernel(data, count, 1));
  Event written(device);
  written.record(producer);
  consumer.wait(written);
  tracker.on(consumer).reads(data, bytes).writes(data, bytes).launch(double_kernel(data, data, count));
  EXPECT_THAT(read_back(consumer, data, count), Each(Eq(2u)));
  EXPECT_TRUE(tracker.hazards().empty());
  device.deallocate(data);
}

/// A side stream reads a block; the host frees it without record_stream and the memory is
/// reused by the main stream. Returns what the side stream read.
std::vector<std::uint32_t> missing_record_stream_program(Device& device, hazard::tracker& tracker) {
  Stream main(device, {.name = "main"});
  Stream side(device, slow_stream("side"));
  auto* seen = static_cast<std::uint32_t*>(device.allocate(bytes));
  auto* block = static_cast<std::uint32_t*>(device.allocate(bytes));
  tracker.track_alloc(block, bytes, main);
  tracker.on(main).writes(block, bytes).launch(fill_kernel(block, count, 7));
  side.wait(main);
  tracker.on(side).reads(block, bytes).writes(seen, bytes).launch(slow_copy_kernel(block, seen, count));
  tracker.track_free(block);
  device.deallocate(block);
  auto* reused = static_cast<std::uint32_t*>(device.allocate(bytes));  // first fit: same bytes
  EXPECT_EQ(reused, block);
  tracker.track_alloc(reused, bytes, main);
  tracker.on(main).writes(reused, bytes).launch(fill_kernel(reused, count, 99));
  auto values = read_back(side, seen, count);
  device.synchronize();
  tracker.track_free(reused);
  device.deallocate(reused);
  device.deallocate(seen);
  return values;
}

TEST(HazardTracker, ReportNamesTheMissingRecordStream) {
  Device device = Device::sim();
  hazard::tracker tracker(device, policy::report);
  EXPECT_THAT(missing_record_stream_program(device, tracker), Each(Eq(99u)));  // the new owner's data
  ASSERT_EQ(kinds(tracker), std::vector<hazard_kind>{hazard_kind::reuse_race});
  EXPECT_THAT(hazard::fix_text(tracker.hazards()[0]), HasSubstr("record_stream("));
  EXPECT_THAT(hazard::fix_text(tracker.hazards()[0]), HasSubstr("`side`"));
}

TEST(HazardTracker, EnforceHoldsTheFreeUntilTheSideStreamIsDone) {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    Device device = Device::sim({.seed = seed});
    hazard::tracker tracker(device, policy::enforce);
    EXPECT_THAT(missing_record_stream_program(device, tracker), Each(Eq(7u))) << "seed " << seed;
    EXPECT_EQ(tracker.inserted().record_streams, 1u);
    EXPECT_TRUE(tracker.hazards().empty());
  }
}

TEST(HazardTracker, HostReadOfAnAsyncCopyBeforeSyncIsAHostRace) {
  for (auto mode : {policy::report, policy::enforce}) {
    Device device = Device::sim();
    hazard::tracker tracker(device, mode);
    Stream copier(device, slow_stream("d2h"));
    auto* data = static_cast<std::uint32_t*>(device.allocate(bytes));
    auto* host = static_cast<std::uint32_t*>(device.allocate_pinned(bytes));
    std::fill(host, host + count, 0u);
    tracker.on(copier).fill(data, 0x11, bytes);
    tracker.on(copier).copy(host, data, bytes);
    tracker.host_reads(host, bytes);
    const std::uint32_t first = host[0];
    if (mode == policy::report) {
      EXPECT_EQ(kinds(tracker), std::vector<hazard_kind>{hazard_kind::host_race});
      EXPECT_EQ(first, 0u);  // read before the copy ran
    } else {
      EXPECT_TRUE(tracker.hazards().empty());
      EXPECT_EQ(tracker.inserted().host_syncs, 1u);
      EXPECT_EQ(first, 0x11111111u);
    }
    device.synchronize();
    device.deallocate_pinned(host);
    device.deallocate(data);
  }
}

TEST(HazardTracker, ThrowOnHazardStopsTheOpBeforeItIsEnqueued) {
  Device device = Device::sim();
  hazard::tracker tracker(device, policy::report);
  tracker.throw_on_hazard();
  Stream a(device, {.name = "a"});
  Stream b(device, {.name = "b"});
  auto* data = static_cast<std::uint32_t*>(device.allocate(bytes));
  tracker.on(a).fill(data, 1, bytes);
  int launched = 0;
  kernel counting{.name = "count", .sim = [&] { ++launched; }};
  EXPECT_THAT([&] { tracker.on(b).reads(data, bytes).launch(counting); },
              ::testing::ThrowsMessage<usage_error>(HasSubstr("race")));
  device.synchronize();
  EXPECT_EQ(launched, 0);
  b.wait(a);
  tracker.on(b).reads(data, bytes).launch(counting);  // still usable, and now ordered
  device.synchronize();
  EXPECT_EQ(launched, 1);
  device.deallocate(data);
}

TEST(HazardTracker, PolicyComesFromTheEnvironment) {
  ::setenv("STREAMSAFE_HAZARDS", "enforce", 1);
  EXPECT_EQ(hazard::policy_from_environment(), policy::enforce);
  ::setenv("STREAMSAFE_HAZARDS", "off", 1);
  EXPECT_EQ(hazard::policy_from_environment(), policy::off);
  ::setenv("STREAMSAFE_HAZARDS", "loud", 1);
  EXPECT_THAT([] { (void)hazard::policy_from_environment(); },
              ::testing::ThrowsMessage<usage_error>(HasSubstr("'loud'")));
  ::unsetenv("STREAMSAFE_HAZARDS");
  EXPECT_EQ(hazard::policy_from_environment(policy::report), policy::report);
}

TEST(HazardTracker, ABugRepeatedInALoopIsReportedOnce) {
  Device device = Device::sim();
  hazard::tracker tracker(device, policy::report);
  Stream a(device, {.name = "a"});
  Stream b(device, {.name = "b"});
  auto* data = static_cast<std::uint32_t*>(device.allocate(bytes));
  for (int iteration = 0; iteration < 100; ++iteration) {
    tracker.on(a).fill(data, 1, bytes);
    tracker.on(b).reads(data, bytes).launch(kernel{.name = "use", .sim = [] {}});
  }
  device.synchronize();
  // b's read races a's fill (one report); a's next fill races b's read (a second call-site pair).
  EXPECT_EQ(kinds(tracker), (std::vector<hazard_kind>{hazard_kind::race, hazard_kind::race}));
  device.deallocate(data);
}

TEST(HazardTracker, AnOpWithManyRangesChecksEveryOne) {
  Device device = Device::sim();
  hazard::tracker tracker(device, policy::report);
  Stream a(device, {.name = "a"});
  Stream b(device, {.name = "b"});
  auto* data = static_cast<std::uint32_t*>(device.allocate(bytes));
  tracker.on(a).writes(data + 100, 4).fill(data + 100, 1, 4);  // the only write, in the 6th range
  auto read = tracker.on(b);
  for (std::size_t piece = 0; piece < 6; ++piece) read.reads(data + piece * 20, 4 * 20);
  read.launch(kernel{.name = "gather", .sim = [] {}});
  device.synchronize();
  ASSERT_EQ(kinds(tracker), std::vector<hazard_kind>{hazard_kind::race});
  EXPECT_EQ(tracker.hazards()[0].range.first, reinterpret_cast<std::uint64_t>(data + 100));
  device.deallocate(data);
}

TEST(HazardTracker, DeviceBuffersFromATrackedAllocatorCarryTheirLifetimes) {
  Device device = Device::sim();
  caching_allocator allocator(device);
  hazard::tracker tracker(device, policy::report);
  hazard::tracked_allocator memory(allocator, tracker);
  Stream main(device, {.name = "main"});
  Stream side(device, slow_stream("side"));
  device_buffer<std::uint32_t, hazard::tracked_allocator> seen(memory, count, side);
  {
    device_buffer<std::uint32_t, hazard::tracked_allocator> block(memory, count, main);
    tracker.on(main).writes(block).launch(fill_kernel(block.data(), count, 7));
    side.wait(main);
    tracker.on(side).reads(block).writes(seen).launch(slow_copy_kernel(block.data(), seen.data(), count));
  }  // freed without record_stream(block, side)
  device_buffer<std::uint32_t, hazard::tracked_allocator> next(memory, count, main);
  tracker.on(main).writes(next).launch(fill_kernel(next.data(), count, 99));
  device.synchronize();
  EXPECT_EQ(kinds(tracker), std::vector<hazard_kind>{hazard_kind::reuse_race});
}

TEST(HazardTracker, OffTracksNothing) {
  Device device = Device::sim();
  hazard::tracker tracker(device, policy::off);
  missing_wait_program(device, tracker);
  EXPECT_TRUE(tracker.hazards().empty());
  EXPECT_EQ(tracker.inserted().total(), 0u);
}

}  // namespace
}  // namespace streamsafe::testing
