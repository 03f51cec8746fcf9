// Failures where the allocator holds frees or ends: an event record of a pending-free fence that
// fails (sim fault seam, alloc/sim_faults.hpp) must leave the frees it held pending, neither lost
// nor reused under the recorded streams' queued work; the destructor, which cannot throw, reports
// what fails (a device call, an observer) and releases the rest.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "alloc/sim_faults.hpp"
#include "backends.hpp"
#include "reuse_oracle.hpp"
#include "streamsafe/alloc/allocator_observer.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe {
namespace {

using ::testing::HasSubstr;
using testing::reuse_oracle;
using testing::slow_stream;

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::uint32_t old_data = 0x0DDA7A00;
constexpr std::uint32_t new_data = 0x0E3D0E3D;

struct FenceFailures : ::testing::Test {
  void TearDown() override {
    detail::sim_memory_faults& faults = detail::sim_faults();
    for (detail::sim_fault* f : {&faults.unmaps, &faults.maps, &faults.frees, &faults.fence_records}) f->arm(0, 0);
  }
  /// A block of main's that `late` reads (queued, starved), freed with record_stream(late).
  void* free_under_late_read(caching_allocator& alloc, Stream& late) {
    void* p = alloc.allocate(mib, main);
    reuse_oracle::write(main, p, mib, old_data);
    late.wait(main);
    oracle.late_read(late, p, mib, old_data);
    alloc.record_stream(p, late);
    alloc.deallocate(p);
    return p;
  }
  /// The next owner's block on main, of the same size, must keep its data, and every late read
  /// must have seen the old data.
  ::testing::AssertionResult next_owner_keeps_its_data(caching_allocator& alloc) {
    void* q = alloc.allocate(mib, main);
    oracle.claim(main, q, mib, new_data);
    ::testing::AssertionResult verdict = oracle.settle();
    alloc.deallocate(q);
    return verdict;
  }

  Device device = Device::sim(sim_options{.memory_capacity = 64 * mib});
  Stream main{device, stream_options{.name = "main"}};
  Stream late1{device, slow_stream("late1")};
  Stream late2{device, slow_stream("late2")};
  reuse_oracle oracle{device};
};

TEST_F(FenceFailures, AFreeRecordedOnTwoStreamsStaysHeldWhenItsFirstFenceFailsToRecord) {
  caching_allocator alloc(device, allocator_options{.fence_batch_frees = 1});  // a fence per free
  void* p = alloc.allocate(mib, main);
  reuse_oracle::write(main, p, mib, old_data);
  for (Stream* late : {&late1, &late2}) {
    late->wait(main);
    oracle.late_read(*late, p, mib, old_data);
    alloc.record_stream(p, *late);
  }
  detail::sim_faults().fence_records.arm(0, 1);
  EXPECT_NO_THROW(alloc.deallocate(p)) << "the free is held; the fence is recorded later";
  EXPECT_EQ(alloc.stats().pending_free_blocks, 1);
  EXPECT_TRUE(next_owner_keeps_its_data(alloc));
  alloc.process_pending_frees();  // the failed fence is recorded now; the streams are done
  alloc.process_pending_frees();
  EXPECT_EQ(alloc.stats().pending_free_blocks, 0) << "the free was lost: never reusable";
  EXPECT_EQ(alloc.stats().active_bytes.current, 0);
}

TEST_F(FenceFailures, DrainKeepsTheFencesItTookWhenAnotherStreamsRecordFails) {
  caching_allocator alloc(device, allocator_options{.fence_batch_frees = 1000});  // fences stay open
  (void)free_under_late_read(alloc, late1);
  (void)free_under_late_read(alloc, late2);
  detail::sim_faults().fence_records.arm(1, 1);  // the first stream's record passes, the second's fails
  EXPECT_THROW(alloc.empty_cache(), cuda_error);
  EXPECT_EQ(alloc.stats().pending_free_blocks, 1) << "the free whose fence failed stays held";
  EXPECT_TRUE(next_owner_keeps_its_data(alloc));
  EXPECT_NO_THROW(alloc.empty_cache());
  EXPECT_EQ(alloc.stats().pending_free_blocks, 0) << "a free whose fence drain had taken was lost";
  EXPECT_EQ(alloc.stats().active_bytes.current, 0);
}

TEST_F(FenceFailures, TheDestructorReportsAFailedSegmentFreeAndReleasesTheRest) {
  const std::size_t free_before = device.memory().free_bytes;
  {
    caching_allocator alloc(device, allocator_options{.segments = segment_kind::fixed});
    void* first = alloc.allocate(20 * mib, main);  // a segment each
    void* second = alloc.allocate(20 * mib, main);
    alloc.deallocate(first);
    alloc.deallocate(second);
    detail::sim_faults().frees.arm(0, 1);
    ::testing::internal::CaptureStderr();
  }
  const std::string reported = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(reported, HasSubstr("~caching_allocator: deallocate of a fixed segment failed"));
  EXPECT_EQ(device.memory().free_bytes, free_before - 20 * mib) << "only the segment whose free failed stays";
}

/// Throws from every mapping report, as an observer with a bug (or out of memory) would.
struct throwing_observer final : allocator_observer {
  void on_mapping(void*, std::size_t, mapping_change) override { throw std::runtime_error("observer failed"); }
};

TEST_F(FenceFailures, AnObserverThatThrowsIsReportedAndTheMemoryStillGoesBack) {
  throwing_observer observer;
  const std::size_t free_before = device.memory().free_bytes;
  ::testing::internal::CaptureStderr();
  {
    caching_allocator alloc(device, allocator_options{.segments = segment_kind::expandable, .observer = &observer});
    alloc.deallocate(alloc.allocate(4 * mib, main));
    EXPECT_NO_THROW(alloc.empty_cache());
    EXPECT_EQ(alloc.stats().reserved_bytes.current, 0);
    alloc.deallocate(alloc.allocate(4 * mib, main));  // mapped again, for the destructor to give back
  }
  const std::string reported = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(reported, HasSubstr("allocator_observer::on_mapping"));
  EXPECT_THAT(reported, HasSubstr("unmapped) threw: observer failed"));
  EXPECT_EQ(device.memory().free_bytes, free_before);
}

}  // namespace
}  // namespace streamsafe
