// The tracked allocator when physical bytes change address: remap moving a freed block's chunk
// to a new block, empty_cache's chunks mapped again by another stream's growth, the
// out-of-memory ladder's. A missing record_stream there is reported (the engine follows the
// bytes through allocator_observer::on_mapping), a correct program is not, and `enforce` keeps a
// lagging stream's bytes from the new owner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <vector>

#include "../alloc/reuse_oracle.hpp"
#include "backends.hpp"
#include "tracker_support.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/hazard/oplog_check.hpp"
#include "streamsafe/hazard/oplog_writer.hpp"
#include "streamsafe/hazard/tracked_allocator.hpp"
#include "streamsafe/hazard/tracker.hpp"

namespace streamsafe::testing {
namespace {

using hazard::hazard_kind;
using hazard::policy;
using ::testing::Contains;
using ::testing::IsEmpty;

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t chunk = 2 * mib;  // the allocator's default granularity

allocator_options growth(expandable_growth policy) {
  // remap moves whenever it can, so one freed chunk is enough to see a move.
  return {.segments = segment_kind::expandable, .growth = policy, .remap_slack_percent = 0};
}

/// An access the engine is told of whose kernel touches nothing: in `report` mode the bytes a
/// lagging stream would touch are unmapped under it (on sim a fault), so only the model sees it.
kernel touching_nothing(const char* name) { return kernel{name, [](native_stream) {}, [] {}}; }

/// A device, a tracker, and an allocator the tracker watches, with a main and a side stream.
class TrackedMappings : public ::testing::Test {
 protected:
  void start(policy mode, allocator_options options, std::size_t sim_capacity = std::size_t{64} << 20) {
    device_.emplace(make_device(test_backend::sim_deterministic, 1, sim_capacity));
    allocator_.emplace(*device_, options);
    tracker_.emplace(*device_, mode);
    memory_.emplace(*allocator_, *tracker_);
    main_.emplace(*device_, stream_options{.name = "main"});
    side_.emplace(*device_, slow_stream("side"));
  }
  void TearDown() override {
    memory_.reset();  // the watcher goes before the allocator
  }
  caching_allocator& allocator() { return *allocator_; }
  hazard::tracker& tracker() { return *tracker_; }
  hazard::tracked_allocator& memory() { return *memory_; }
  Stream& main() { return *main_; }
  Stream& side() { return *side_; }

  /// A chunk-sized block of main's that the side stream also writes (after waiting for main),
  /// freed with or without record_stream; `kept` is a live neighbour, so the freed chunk is a hole
  /// no larger block fits in: growth must move or map chunks elsewhere.
  void free_block_used_on_side(bool record) {
    void* used = memory().allocate(chunk, main());
    kept_ = memory().allocate(chunk, main());
    tracker().on(main()).writes(used, chunk).launch(touching_nothing("fill"));
    side().wait(main());
    tracker().on(side()).writes(used, chunk).launch(touching_nothing("side_write"));
    if (record) memory().record_stream(used, side());
    freed_ = used;
    memory().deallocate(used);
  }
  /// A block on `stream` that needs new chunks, then written there.
  void* grow_and_write(StreamRef stream, std::size_t bytes) {
    void* grown = memory().allocate(bytes, stream);
    tracker().on(stream).writes(grown, bytes).launch(touching_nothing("new_owner_write"));
    return grown;
  }
  [[nodiscard]] bool overlaps_freed(const void* p, std::size_t bytes) const {
    const auto* first = static_cast<const std::byte*>(p);
    const auto* freed = static_cast<const std::byte*>(freed_);
    return first < freed + chunk && freed < first + bytes;
  }

  std::optional<Device> device_;
  std::optional<caching_allocator> allocator_;
  std::optional<hazard::tracker> tracker_;
  std::optional<hazard::tracked_allocator> memory_;
  std::optional<Stream> main_;
  std::optional<Stream> side_;
  void* kept_ = nullptr;
  void* freed_ = nullptr;
};

TEST_F(TrackedMappings, RemapMovingTheChunkOfABlockFreedWithoutRecordStreamIsAReuseRace) {
  start(policy::report, growth(expandable_growth::remap));
  free_block_used_on_side(false);
  const std::uint64_t unmaps = allocator().stats().device_calls.unmap;
  void* grown = grow_and_write(main(), 2 * chunk);
  ASSERT_EQ(allocator().stats().device_calls.unmap, unmaps + 1) << "remap moved no chunk";
  ASSERT_FALSE(overlaps_freed(grown, 2 * chunk)) << "the new block is at the freed address: no move to see";
  EXPECT_THAT(kinds(tracker()), Contains(hazard_kind::reuse_race));
}

TEST_F(TrackedMappings, EmptyCacheThenAnotherStreamsGrowthIsAReuseRace) {
  start(policy::report, growth(expandable_growth::map_new));
  free_block_used_on_side(false);
  allocator().empty_cache();  // main's free chunk goes back to the device
  Stream other(*device_, {.name = "other"});
  void* grown = grow_and_write(other, chunk);  // other's own range: a new address
  ASSERT_FALSE(overlaps_freed(grown, chunk));
  EXPECT_THAT(kinds(tracker()), Contains(hazard_kind::reuse_race));
}

TEST_F(TrackedMappings, TheOutOfMemoryLadderGivingTheChunkToAGrowthIsAReuseRace) {
  // 7 MiB: the freed chunk and its neighbour (4 MiB) leave no room for two new chunks, so the
  // ladder gives the free one back (release_cached) before growth maps them.
  start(policy::report, growth(expandable_growth::map_new), 7 * mib);
  free_block_used_on_side(false);
  void* grown = grow_and_write(main(), 2 * chunk);
  ASSERT_GE(allocator().stats().num_alloc_retries, 1u) << "the ladder did not run";
  ASSERT_FALSE(overlaps_freed(grown, 2 * chunk));
  EXPECT_THAT(kinds(tracker()), Contains(hazard_kind::reuse_race));
}

TEST_F(TrackedMappings, ABlockUsedOnItsOwnStreamOnlyMovesWithoutReports) {
  start(policy::report, growth(expandable_growth::remap));
  void* used = memory().allocate(chunk, main());
  kept_ = memory().allocate(chunk, main());
  tracker().on(main()).writes(used, chunk).launch(touching_nothing("fill"));
  freed_ = used;
  memory().deallocate(used);
  const std::uint64_t unmaps = allocator().stats().device_calls.unmap;
  void* grown = grow_and_write(main(), 2 * chunk);
  ASSERT_EQ(allocator().stats().device_calls.unmap, unmaps + 1);
  ASSERT_FALSE(overlaps_freed(grown, 2 * chunk));
  EXPECT_THAT(kinds(tracker()), IsEmpty());
}

TEST_F(TrackedMappings, ASideUseTheAllocationStreamWaitedForMovesWithoutReports) {
  start(policy::report, growth(expandable_growth::remap));
  void* used = memory().allocate(chunk, main());
  kept_ = memory().allocate(chunk, main());
  tracker().on(main()).writes(used, chunk).launch(touching_nothing("fill"));
  side().wait(main());
  tracker().on(side()).writes(used, chunk).launch(touching_nothing("side_write"));
  main().wait(side());  // the release point covers the side's write
  freed_ = used;
  memory().deallocate(used);
  const std::uint64_t unmaps = allocator().stats().device_calls.unmap;
  void* grown = grow_and_write(main(), 2 * chunk);
  ASSERT_EQ(allocator().stats().device_calls.unmap, unmaps + 1);
  ASSERT_FALSE(overlaps_freed(grown, 2 * chunk));
  EXPECT_THAT(kinds(tracker()), IsEmpty());
}

TEST_F(TrackedMappings, ARecordStreamedBlockTheLadderWaitsForGrowsWithoutReports) {
  start(policy::report, growth(expandable_growth::remap), 7 * mib);
  free_block_used_on_side(true);
  void* grown = grow_and_write(main(), 2 * chunk);
  ASSERT_GE(allocator().stats().num_alloc_retries, 1u) << "the ladder did not run";
  ASSERT_FALSE(overlaps_freed(grown, 2 * chunk));
  EXPECT_THAT(kinds(tracker()), IsEmpty());
}

// The side stream's real write is still queued (starved) when the next block grows: enforce's
// record_stream at the free holds the block, so no chunk under the write moves, and both owners
// keep their bytes.
TEST_F(TrackedMappings, EnforceKeepsALaggingStreamsChunkFromTheNextBlock) {
  constexpr std::uint32_t old_data = 0x0DDA7A00;
  constexpr std::uint32_t late_data = 0x1A7E1A7E;
  constexpr std::uint32_t new_data = 0x0E3D0E3D;
  start(policy::enforce, growth(expandable_growth::remap));
  reuse_oracle oracle(*device_);
  void* used = memory().allocate(chunk, main());
  kept_ = memory().allocate(chunk, main());
  tracker().on(main()).writes(used, chunk).launch(fill_kernel(static_cast<std::uint32_t*>(used), chunk / 4, old_data));
  side().wait(main());
  tracker().on(side()).writes(used, chunk).launch(slow_fill_kernel(static_cast<std::uint32_t*>(used), chunk / 4, late_data));
  memory().deallocate(used);
  EXPECT_EQ(tracker().inserted().record_streams, 1u);
  void* grown = memory().allocate(2 * chunk, main());
  tracker().on(main()).writes(grown, 2 * chunk).launch(touching_nothing("claim"));
  oracle.claim(main(), grown, 2 * chunk, new_data);
  EXPECT_TRUE(oracle.settle());
  EXPECT_THAT(kinds(tracker()), IsEmpty());
  memory().deallocate(grown);
}

// What the live run saw, `streamsafe check` sees: the op log carries the unmap and map rows.
TEST_F(TrackedMappings, TheOpLogOfARemapReplaysToTheSameReuseRace) {
  start(policy::report, growth(expandable_growth::remap));
  std::stringstream log;
  hazard::oplog_writer writer(log);
  tracker().record_to(&writer);
  free_block_used_on_side(false);
  (void)grow_and_write(main(), 2 * chunk);
  tracker().record_to(nullptr);
  ASSERT_THAT(log.str(), ::testing::HasSubstr("\"op\":\"unmap\""));
  std::vector<hazard_kind> replayed;
  hazard::check_oplog(log, {.on_hazard = [&](const hazard::hazard& found) { replayed.push_back(found.kind); }});
  EXPECT_THAT(replayed, Contains(hazard_kind::reuse_race));
}

TEST_F(TrackedMappings, ASecondTrackedAllocatorOnTheSameAllocatorIsRefused) {
  start(policy::report, growth(expandable_growth::remap));
  hazard::tracker other(*device_, policy::report);
  EXPECT_THROW(hazard::tracked_allocator(allocator(), other), usage_error);
  free_block_used_on_side(false);  // the first one still watches
  (void)grow_and_write(main(), 2 * chunk);
  EXPECT_THAT(kinds(tracker()), Contains(hazard_kind::reuse_race));
}

}  // namespace
}  // namespace streamsafe::testing
