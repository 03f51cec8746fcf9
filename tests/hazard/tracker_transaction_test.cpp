// `enforce` as a transaction on a live sim device: whatever throws while the tracker acts (the
// allocator's record_stream, a runtime call, the sink, the enqueue), the engine holds no more
// than the runtime did, so the allocator and the engine agree and the program may retry. And
// two trackers on one device and thread each see the other's insertions as runtime calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "backends.hpp"
#include "tracker_support.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/hazard/tracked_allocator.hpp"
#include "streamsafe/hazard/tracker.hpp"
#include "streamsafe/kernel.hpp"

namespace streamsafe::testing {
namespace {

using hazard::policy;
using ::testing::Each;
using ::testing::Eq;
using ::testing::IsEmpty;

// The side stream's read of the block is still queued (side is starved) when the block is freed
// without record_stream. The first record_stream `enforce` makes fails: the free throws, the
// block stays live for the allocator and the engine, and freeing it again records the side
// stream, so the bytes are not reused under the read.
TEST(TrackerTransaction, AFreeWhoseRecordStreamThrowsStaysLiveAndCanBeFreedAgain) {
  Device device = Device::sim();
  caching_allocator allocator(device, allocator_options{});
  hazard::tracker tracker(device, policy::enforce);
  hazard::tracked_allocator memory(allocator, tracker);
  int failures_left = 1;
  tracker.set_record_stream_action([&](const void* block, StreamRef stream) {
    if (failures_left-- > 0) throw std::runtime_error("record_stream failed");
    allocator.record_stream(const_cast<void*>(block), stream);
  });
  Stream main(device, {.name = "main"});
  Stream side(device, slow_stream("side"));
  auto* seen = static_cast<std::uint32_t*>(device.allocate(bytes));
  auto* block = static_cast<std::uint32_t*>(memory.allocate(bytes, main));
  tracker.on(main).writes(block, bytes).launch(fill_kernel(block, count, 7));
  side.wait(main);
  tracker.on(side).reads(block, bytes).writes(seen, bytes).launch(slow_copy_kernel(block, seen, count));
  EXPECT_THROW(memory.deallocate(block), std::runtime_error);
  EXPECT_EQ(tracker.inserted().record_streams, 0u);  // planned, not carried out: not applied
  ASSERT_NO_THROW(memory.deallocate(block));
  EXPECT_EQ(tracker.inserted().record_streams, 1u);
  auto* next = static_cast<std::uint32_t*>(memory.allocate(bytes, main));
  tracker.on(main).writes(next, bytes).launch(fill_kernel(next, count, 99));
  device.synchronize();
  EXPECT_THAT(read_back(main, seen, count), Each(Eq(7u)));  // the side stream read the old bytes
  memory.deallocate(next);
  allocator.process_pending_frees();
  EXPECT_EQ(allocator.stats().allocated_bytes.current, 0);  // both blocks went back
  EXPECT_THAT(tracker.hazards(), IsEmpty());
  device.deallocate(seen);
}

// The side write races with main's and the sink throws: the op is not enqueued, and not in the
// model either, so main's next write, ordered after its own, is clean.
TEST(TrackerTransaction, AnOpWhoseHazardThrowsIsNeitherEnqueuedNorRecorded) {
  Device device = Device::sim();
  hazard::tracker tracker(device, policy::report);
  tracker.throw_on_hazard();
  Stream main(device, {.name = "main"});
  Stream side(device, slow_stream("side"));
  auto* data = static_cast<std::uint32_t*>(device.allocate(bytes));
  tracker.on(main).writes(data, bytes).launch(fill_kernel(data, count, 1));
  EXPECT_THROW(tracker.on(side).writes(data, bytes).launch(fill_kernel(data, count, 2)), usage_error);
  EXPECT_NO_THROW(tracker.on(main).writes(data, bytes).launch(fill_kernel(data, count, 3)));
  device.synchronize();
  EXPECT_THAT(read_back(main, data, count), Each(Eq(3u)));
  device.deallocate(data);
}

// The enqueue itself fails (a copy to null): the side stream's read is not in the model, so
// main's next write, which would race with it, is clean.
TEST(TrackerTransaction, AnOpWhoseEnqueueThrowsIsNotRecorded) {
  Device device = Device::sim();
  hazard::tracker tracker(device, policy::report);
  Stream main(device, {.name = "main"});
  Stream side(device, slow_stream("side"));
  auto* data = static_cast<std::uint32_t*>(device.allocate(bytes));
  tracker.on(main).writes(data, bytes).launch(fill_kernel(data, count, 1));
  side.wait(main);
  EXPECT_THROW(tracker.on(side).copy(nullptr, data, bytes), usage_error);
  tracker.on(main).writes(data, bytes).launch(fill_kernel(data, count, 3));
  EXPECT_THAT(tracker.hazards(), IsEmpty());
  device.synchronize();
  device.deallocate(data);
}

// The host sync `enforce` inserts before a host read throws (the producer's kernel failed, and
// the sync reports it): the model is told neither the sync nor the read, and the retry syncs.
TEST(TrackerTransaction, AnInsertedSyncThatThrowsIsNotApplied) {
  Device device = Device::sim();
  hazard::tracker tracker(device, policy::enforce);
  Stream producer(device, {.name = "producer"});
  auto* data = static_cast<std::uint32_t*>(device.allocate(bytes));
  const kernel failing{"failing_fill", {}, [] { throw std::runtime_error("device fault"); }};
  tracker.on(producer).writes(data, bytes).launch(failing);  // still queued: sim runs it at the sync
  EXPECT_THROW(tracker.host_reads(data, bytes), error);
  EXPECT_EQ(tracker.inserted().host_syncs, 0u);
  EXPECT_NO_THROW(tracker.host_reads(data, bytes));
  EXPECT_EQ(tracker.inserted().host_syncs, 1u);
  EXPECT_THAT(tracker.hazards(), IsEmpty());
  device.deallocate(data);
}

// Tracker `fixer` (enforce) inserts the wait `consumer` needs; tracker `watcher` (report), on the
// same device and thread, must see that wait as it sees any runtime call.
TEST(TrackerTransaction, ATrackerSeesTheWaitsAnotherTrackerInserts) {
  Device device = Device::sim();
  hazard::tracker fixer(device, policy::enforce);
  hazard::tracker watcher(device, policy::report);
  Stream producer(device, slow_stream("producer"));
  Stream consumer(device, {.name = "consumer"});
  auto* in = static_cast<std::uint32_t*>(device.allocate(bytes));
  auto* out = static_cast<std::uint32_t*>(device.allocate(bytes));
  for (auto* tracker : {&fixer, &watcher}) {
    tracker->on(producer).writes(in, bytes).launch(slow_fill_kernel(in, count, 4));
  }
  fixer.on(consumer).reads(in, bytes).writes(out, bytes).launch(double_kernel(in, out, count));
  EXPECT_EQ(fixer.inserted().stream_waits, 1u);
  watcher.on(consumer).reads(in, bytes).writes(out, bytes).launch(double_kernel(in, out, count));
  EXPECT_THAT(watcher.hazards(), IsEmpty()) << "the watcher missed the fixer's wait";
  EXPECT_THAT(read_back(consumer, out, count), Each(Eq(8u)));
  device.synchronize();
  device.deallocate(in);
  device.deallocate(out);
}

}  // namespace
}  // namespace streamsafe::testing
