// The caching allocator's rules on the sim backend: reuse, cross-stream ordering, record_stream,
// the out-of-memory ladder, statistics and snapshots.
#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <cstdint>
#include <thread>
#include <string>

#include "backends.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe {
namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;

struct AllocatorTest : ::testing::Test {
  Device device = Device::sim(sim_options{.memory_capacity = 64 * mib});
  Stream a{device, stream_options{.name = "a"}};
  Stream b{device, stream_options{.name = "b"}};
  Stream slow{device, stream_options{.name = "slow", .pacing = sim_pacing::starved}};
};

TEST_F(AllocatorTest, SameStreamFreeIsReusedAtOnce) {
  caching_allocator alloc(device, allocator_options{});
  void* first = alloc.allocate(1000, a);
  alloc.deallocate(first);
  void* second = alloc.allocate(900, a);
  EXPECT_EQ(first, second);
  alloc.deallocate(second);
}

TEST_F(AllocatorTest, SizesAreRoundedTo512) {
  caching_allocator alloc(device, allocator_options{});
  void* p = alloc.allocate(1, a);
  EXPECT_EQ(alloc.block_of(p).size, 512u);
  EXPECT_EQ(alloc.block_of(p).requested, 1u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 512, 0u);
  alloc.deallocate(p);
}

TEST_F(AllocatorTest, NeighboursMergeSoALargerRequestFitsWithoutGrowing) {
  caching_allocator alloc(device, allocator_options{.segments = segment_kind::fixed});
  void* x = alloc.allocate(256 * kib, a);
  void* y = alloc.allocate(256 * kib, a);
  // The rest of the 2 MiB segment, so only x and y merged can serve 512 KiB.
  void* rest_one = alloc.allocate(768 * kib, a);
  void* rest_two = alloc.allocate(768 * kib, a);
  ASSERT_EQ(alloc.stats().segment.current, 1);
  alloc.deallocate(x);
  alloc.deallocate(y);  // the merge is deferred (same-stream frees): the request below forces it
  void* z = alloc.allocate(512 * kib, a);
  EXPECT_EQ(z, x);
  EXPECT_EQ(alloc.stats().segment.current, 1);
  for (void* p : {z, rest_one, rest_two}) alloc.deallocate(p);
}

TEST_F(AllocatorTest, BorrowedBlockMakesTheBorrowerWaitForTheLender) {
  // A device that holds one small segment: b cannot grow, so it must borrow.
  Device full = Device::sim(sim_options{.memory_capacity = 2 * mib});
  Stream lender(full, {.name = "lender", .pacing = sim_pacing::starved});
  Stream borrower(full, {.name = "borrower"});
  caching_allocator alloc(full, allocator_options{.segments = segment_kind::fixed});
  auto* p = static_cast<std::uint32_t*>(alloc.allocate(4 * kib, lender));
  lender.fill(p, 0x11, 4 * kib);  // starved: still queued when the block moves to the borrower
  alloc.deallocate(p);
  StreamRef b = borrower;
  auto* q = static_cast<std::uint32_t*>(alloc.allocate(4 * kib, b));
  EXPECT_EQ(p, q) << "the borrower should borrow the block cached by the idle stream";
  b.fill(q, 0x22, 4 * kib);
  b.synchronize();
  EXPECT_EQ(q[0], 0x22222222u) << "b's write must land after the lender's queued write";
  EXPECT_EQ(alloc.stats().num_cross_stream_reuses, 1u);
  alloc.deallocate(q);
}

TEST_F(AllocatorTest, WithMemoryToSpareAStreamGrowsItsOwnCacheInsteadOfBorrowing) {
  caching_allocator alloc(device, allocator_options{.segments = segment_kind::fixed});
  void* p = alloc.allocate(4 * kib, a);
  alloc.deallocate(p);
  void* q = alloc.allocate(4 * kib, b);
  EXPECT_NE(p, q);
  EXPECT_EQ(alloc.stats().num_cross_stream_reuses, 0u);
  alloc.deallocate(q);
}

TEST_F(AllocatorTest, NeverPolicyKeepsStreamsApart) {
  caching_allocator alloc(device, allocator_options{.segments = segment_kind::fixed, .reuse = cross_stream_reuse::never});
  void* p = alloc.allocate(4 * kib, a);
  alloc.deallocate(p);
  void* q = alloc.allocate(4 * kib, b);
  EXPECT_NE(p, q);
  alloc.deallocate(q);
}

TEST(RecordStream, HoldsTheBlockUntilTheRecordedStreamFinishes) {
  Device device = Device::sim(sim_options{.memory_capacity = 64 * mib, .mode = sim_mode::threaded});
  Stream a(device);
  Stream reader(device);
  caching_allocator alloc(device, allocator_options{});
  std::atomic<bool> release_reader{false};
  void* p = alloc.allocate(4 * kib, a);
  reader.launch(kernel{"held reader", {}, [&release_reader] {
                         while (!release_reader.load()) std::this_thread::yield();
                       }});
  alloc.record_stream(p, reader);
  alloc.deallocate(p);
  EXPECT_EQ(alloc.stats().pending_free_blocks, 1);
  EXPECT_EQ(alloc.stats().pending_free_bytes, 4 * 1024);
  alloc.process_pending_frees();
  EXPECT_EQ(alloc.stats().pending_free_blocks, 1) << "the reader has not finished";
  void* q = alloc.allocate(4 * kib, a);
  EXPECT_NE(p, q) << "the reader may still use p";
  release_reader = true;
  reader.synchronize();
  alloc.process_pending_frees();
  EXPECT_EQ(alloc.stats().pending_free_blocks, 0);
  EXPECT_EQ(alloc.stats().active_bytes.current, 4 * 1024);
  void* r = alloc.allocate(4 * kib, a);
  EXPECT_EQ(p, r) << "reclaimed after the reader finished";
  alloc.deallocate(q);
  alloc.deallocate(r);
}

TEST(RecordStream, FreesOnABusyStreamShareFencesAndNoneIsReusedEarly) {
  Device device = Device::sim(sim_options{.memory_capacity = 64 * mib, .mode = sim_mode::threaded});
  Stream a(device);
  Stream reader(device);
  caching_allocator alloc(device, parse_alloc_conf("fence_batch:4"));
  std::atomic<bool> release_reader{false};
  reader.launch(kernel{"held reader", {}, [&release_reader] {
                         while (!release_reader.load()) std::this_thread::yield();
                       }});
  constexpr int frees = 10;
  std::vector<void*> freed;
  for (int i = 0; i < frees; ++i) {
    void* p = alloc.allocate(4 * kib, a);
    alloc.record_stream(p, reader);
    alloc.deallocate(p);
    freed.push_back(p);
  }
  // Fences of four frees: two recorded, the last two frees wait in the open fence.
  EXPECT_EQ(alloc.stats().num_free_fences, 2u);
  EXPECT_EQ(alloc.stats().pending_free_blocks, frees);
  void* fresh = alloc.allocate(4 * kib, a);
  EXPECT_EQ(std::find(freed.begin(), freed.end(), fresh), freed.end()) << "the reader may still use it";
  release_reader = true;
  reader.synchronize();
  alloc.process_pending_frees();  // records the open fence (two frees) and queries the others
  alloc.process_pending_frees();
  reader.synchronize();
  alloc.process_pending_frees();
  EXPECT_EQ(alloc.stats().pending_free_blocks, 0);
  EXPECT_EQ(alloc.stats().num_free_fences, 3u);
  alloc.deallocate(fresh);
}

TEST(AllocatorStreams, AStreamMayBeDestroyedBeforeTheAllocator) {
  Device device = Device::sim(sim_options{.memory_capacity = 64 * mib, .mode = sim_mode::threaded});
  caching_allocator alloc(device, allocator_options{});
  void* outlives_its_stream = nullptr;
  {
    Stream allocating(device);
    Stream reader(device);
    void* held = alloc.allocate(4 * kib, allocating);
    outlives_its_stream = alloc.allocate(8 * kib, allocating);
    alloc.record_stream(held, reader);
    alloc.deallocate(held);  // pending on `reader`, whose handle goes next
  }
  // The allocator kept both streams: freeing, polling and releasing use them (ASan in CI).
  alloc.deallocate(outlives_its_stream);
  alloc.process_pending_frees();
  alloc.empty_cache();
  const allocator_stats s = alloc.stats();
  EXPECT_EQ(s.pending_free_blocks, 0);
  EXPECT_EQ(s.allocated_bytes.current, 0);
  EXPECT_EQ(s.reserved_bytes.current, 0);
}

TEST_F(AllocatorTest, RecordingTheAllocationStreamChangesNothing) {
  caching_allocator alloc(device, allocator_options{});
  void* p = alloc.allocate(4 * kib, a);
  alloc.record_stream(p, a);
  alloc.deallocate(p);
  EXPECT_EQ(alloc.stats().pending_free_blocks, 0);
}

TEST_F(AllocatorTest, OutOfMemoryLadderReleasesCacheThenThrowsWithFigures) {
  caching_allocator alloc(device, allocator_options{.segments = segment_kind::fixed});
  void* big = alloc.allocate(40 * mib, a);
  alloc.deallocate(big);  // cached in a 40 MiB segment of stream a
  void* other = alloc.allocate(30 * mib, a);  // served from the cache
  alloc.deallocate(other);
  void* huge = alloc.allocate(50 * mib, b);  // needs the cache released first
  EXPECT_GE(alloc.stats().num_alloc_retries, 1u);
  try {
    (void)alloc.allocate(60 * mib, b);
    FAIL() << "expected out_of_memory";
  } catch (const out_of_memory& e) {
    const std::string what = e.what();
    for (const char* part : {"62914560 bytes", "free", "allocated", "reserved", "pending-free", "largest free block",
                             "What to try"}) {
      EXPECT_NE(what.find(part), std::string::npos) << part << " missing from: " << what;
    }
  }
  EXPECT_EQ(alloc.stats().num_ooms, 1u);
  void* small = alloc.allocate(4 * mib, b);  // state is consistent: a smaller request works
  EXPECT_NE(small, nullptr);
  alloc.deallocate(small);
  alloc.deallocate(huge);
}

TEST_F(AllocatorTest, OutOfMemoryLadderWaitsForPendingFrees) {
  caching_allocator alloc(device, allocator_options{.segments = segment_kind::fixed});
  void* p = alloc.allocate(40 * mib, a);
  slow.fill(p, 0, 40 * mib);
  alloc.record_stream(p, slow);
  alloc.deallocate(p);
  void* q = alloc.allocate(40 * mib, b);  // only fits once the pending free is reclaimed
  EXPECT_NE(q, nullptr);
  alloc.deallocate(q);
}

TEST_F(AllocatorTest, ExpandableSegmentsUnmapUnderPressure) {
  caching_allocator alloc(device, allocator_options{.segments = segment_kind::expandable});
  void* x = alloc.allocate(40 * mib, a);
  alloc.deallocate(x);
  void* y = alloc.allocate(40 * mib, b);  // a's mapped chunks are borrowed or released
  alloc.deallocate(y);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes.current, 0);
}

// A freed hole too small for the next request: remap moves its chunks to where the request
// goes, map_new maps new ones and keeps the hole mapped.
std::int64_t reserved_after_outgrowing_a_hole(const Device& device, Stream& stream, allocator_options options) {
  caching_allocator alloc(device, options);
  void* hole = alloc.allocate(8 * mib, stream);
  void* kept = alloc.allocate(4 * mib, stream);
  alloc.deallocate(hole);
  void* bigger = alloc.allocate(12 * mib, stream);
  const std::int64_t reserved = alloc.stats().reserved_bytes.current;
  alloc.deallocate(bigger);
  alloc.deallocate(kept);
  return reserved;
}

TEST_F(AllocatorTest, RemapGrowthMovesFreeChunksInsteadOfMappingMore) {
  const allocator_options remap{.segments = segment_kind::expandable, .growth = expandable_growth::remap,
                                .remap_slack_percent = 0};
  EXPECT_EQ(reserved_after_outgrowing_a_hole(device, a, remap), static_cast<std::int64_t>(16 * mib));
  allocator_options map_new = remap;
  map_new.growth = expandable_growth::map_new;
  EXPECT_EQ(reserved_after_outgrowing_a_hole(device, a, map_new), static_cast<std::int64_t>(24 * mib));
  allocator_options slack = remap;
  slack.remap_slack_percent = 100;  // 24 MiB is within 16 MiB peak live + 100%: nothing moves
  EXPECT_EQ(reserved_after_outgrowing_a_hole(device, a, slack), static_cast<std::int64_t>(24 * mib));
}

// Two streams that peak in turn: under remap the second takes the chunks the first freed (the
// device's reserved bytes follow its peak live bytes); map_new keeps both peaks mapped.
std::int64_t reserved_after_streams_peak_in_turn(const Device& device, Stream& first, Stream& second,
                                                 allocator_options options) {
  caching_allocator alloc(device, options);
  void* x = alloc.allocate(16 * mib, first);
  alloc.deallocate(x);
  void* y = alloc.allocate(16 * mib, second);
  const std::int64_t reserved = alloc.stats().reserved_bytes.current;
  alloc.deallocate(y);
  return reserved;
}

TEST_F(AllocatorTest, RemapStreamsPeakingInTurnShareTheirChunks) {
  const allocator_options remap{.segments = segment_kind::expandable, .growth = expandable_growth::remap,
                                .remap_slack_percent = 0};
  EXPECT_EQ(reserved_after_streams_peak_in_turn(device, a, b, remap), static_cast<std::int64_t>(16 * mib));
  allocator_options map_new = remap;
  map_new.growth = expandable_growth::map_new;
  EXPECT_EQ(reserved_after_streams_peak_in_turn(device, a, b, map_new), static_cast<std::int64_t>(32 * mib));
}

// Device calls and host synchronizations of a remap allocator (no repeat plan) over `iterations`
// of `loop`, after the first two.
template <typename Loop>
std::pair<std::uint64_t, std::uint64_t> calls_and_syncs_after_two(caching_allocator& alloc, int iterations, Loop loop) {
  const auto calls = [&alloc] {
    const allocator_stats s = alloc.stats();
    return s.device_calls.map + s.device_calls.unmap;
  };
  for (int i = 0; i < 2; ++i) loop();
  const std::uint64_t calls_before = calls();
  const std::uint64_t syncs_before = alloc.stats().num_host_syncs;
  for (int i = 2; i < iterations; ++i) loop();
  return {calls() - calls_before, alloc.stats().num_host_syncs - syncs_before};
}

const allocator_options remap_without_plan{.segments = segment_kind::expandable, .growth = expandable_growth::remap,
                                           .repeat_plan = false};

TEST_F(AllocatorTest, RemapStreamsPeakingInTurnSettleInsteadOfMovingChunksBetweenThem) {
  caching_allocator alloc(device, remap_without_plan);
  const auto [calls, syncs] = calls_and_syncs_after_two(alloc, 8, [&] {
    alloc.deallocate(alloc.allocate(16 * mib, a));
    alloc.deallocate(alloc.allocate(16 * mib, b));
  });
  EXPECT_EQ(calls, 0u) << "each stream keeps what its peak needs once it has had to grow again";
  EXPECT_EQ(syncs, 0u);
}

TEST_F(AllocatorTest, RemapStreamPerRequestBesideALongLivedStreamSettles) {
  caching_allocator alloc(device, remap_without_plan);
  const auto [calls, syncs] = calls_and_syncs_after_two(alloc, 8, [&] {
    {
      Stream request(device, stream_options{.name = "request"});
      void* p = alloc.allocate(8 * mib, request);
      request.fill(p, 1, 8 * mib);
      alloc.deallocate(p);
    }
    alloc.deallocate(alloc.allocate(8 * mib, a));
  });
  EXPECT_EQ(syncs, 0u) << "a's chunks were taken for each new stream and a synchronized for it";
  EXPECT_LE(calls, 6u * 8) << "more than a new stream's own chunks, mapped and released, per iteration";
}

// Remap without the plan or slack: only the device's budget moves chunks between streams.
const allocator_options remap_tight{.segments = segment_kind::expandable, .growth = expandable_growth::remap,
                                    .repeat_plan = false, .remap_slack_percent = 0};

// a peaks at 16 MiB and frees; b, climbing to its own 16 MiB, takes a's chunks. Then a grows
// again below its peak: it takes b's free chunks back instead of mapping beside them.
TEST_F(AllocatorTest, RemapStreamGrowingAgainAfterGivingChunksTakesBackFreeOnes) {
  caching_allocator alloc(device, remap_tight);
  alloc.deallocate(alloc.allocate(16 * mib, a));
  alloc.deallocate(alloc.allocate(16 * mib, b));
  ASSERT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(16 * mib));
  void* again = alloc.allocate(8 * mib, a);
  EXPECT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(16 * mib))
      << "a mapped new chunks beside b's free ones";
  alloc.deallocate(again);
}

// a peaks at 16 MiB, b takes a's chunks for its own 16, a grows again below its peak (taking 8
// back): from here a keeps its chunks. 16 MiB reserved, the device's live peak 16 MiB.
void a_keeps_its_chunks(caching_allocator& alloc, Stream& a, Stream& b) {
  alloc.deallocate(alloc.allocate(16 * mib, a));
  alloc.deallocate(alloc.allocate(16 * mib, b));
  alloc.deallocate(alloc.allocate(8 * mib, a));
}

// After growing again a keeps its chunks, until it climbs past its own peak: then it is still
// setting its peak, and a third stream climbing to its own takes a's free chunks.
TEST_F(AllocatorTest, RemapStreamClimbingPastItsPeakAgainLendsItsChunksAgain) {
  caching_allocator alloc(device, remap_tight);
  Stream c{device, stream_options{.name = "c"}};
  a_keeps_its_chunks(alloc, a, b);
  alloc.deallocate(alloc.allocate(24 * mib, a));  // past its peak: no longer
  ASSERT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(24 * mib));
  void* third = alloc.allocate(24 * mib, c);
  EXPECT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(24 * mib))
      << "c mapped new chunks beside a's free ones";
  alloc.deallocate(third);
}

// A stream that keeps its chunks keeps them from streams that climb to peaks the device has
// seen, not from one that takes the device's live bytes past their peak: then no stream's cache
// has settled. a keeps its 8 MiB, b holds the other 8; c's 24 MiB, past the device's 16, takes
// both instead of mapping 16 beside them.
TEST_F(AllocatorTest, RemapDeviceSettingANewPeakTakesTheChunksAStreamKeeps) {
  caching_allocator alloc(device, remap_tight);
  Stream c{device, stream_options{.name = "c"}};
  a_keeps_its_chunks(alloc, a, b);
  ASSERT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(16 * mib));
  void* third = alloc.allocate(24 * mib, c);
  EXPECT_EQ(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(24 * mib))
      << "c mapped beside the chunks a keeps though the device's live bytes passed their peak";
  alloc.deallocate(third);
}

// A climb clears what the stream gave: a growing again below its peak afterwards (a small
// block, in a range of its own) is still setting its peak, keeps nothing, and c climbing to its
// own peak takes a's free chunks instead of mapping beside them.
TEST_F(AllocatorTest, RemapClimbPastItsPeakForgetsTheChunksTheStreamGave) {
  caching_allocator alloc(device, remap_tight);
  Stream c{device, stream_options{.name = "c"}};
  alloc.deallocate(alloc.allocate(16 * mib, a));
  alloc.deallocate(alloc.allocate(16 * mib, b));  // b takes a's chunks
  alloc.deallocate(alloc.allocate(24 * mib, a));  // a climbs past its peak
  void* small = alloc.allocate(512 * kib, a);     // below it, in a new small range
  void* third = alloc.allocate(24 * mib, c);
  EXPECT_LE(alloc.stats().reserved_bytes.current, static_cast<std::int64_t>(28 * mib))
      << "a kept its chunks after a climb, as if it had given some since";
  alloc.deallocate(third);
  alloc.deallocate(small);
}

// A stream that never gave chunks away grows below its own peak within its own budget: b's free
// chunks stay b's, so streams that take turns do not move chunks back and forth. (slow's work
// queued on its chunks keeps b from taking them while b climbs, so slow gives nothing.)
TEST_F(AllocatorTest, RemapStreamThatGaveNothingGrowsBelowItsPeakBesideTheOthers) {
  allocator_options roomy = remap_tight;
  roomy.remap_slack_percent = 20;  // room in slow's own budget for the chunk its growth maps
  caching_allocator alloc(device, roomy);
  void* first = alloc.allocate(16 * mib, slow);
  slow.fill(first, 1, 16 * mib);
  alloc.deallocate(first);
  alloc.deallocate(alloc.allocate(8 * mib, b));  // beside slow's: 24 MiB mapped for a 16 MiB peak
  slow.synchronize();
  void* small = alloc.allocate(512 * kib, slow);  // below slow's peak, in a new small range
  const std::uint64_t maps_before = alloc.stats().device_calls.map;
  void* again = alloc.allocate(8 * mib, b);
  EXPECT_EQ(alloc.stats().device_calls.map, maps_before) << "slow took b's free chunks for a growth below its peak";
  alloc.deallocate(again);
  alloc.deallocate(small);
}

// A caller resetting the peak figures each iteration changes nothing the allocator does: the
// streams' own peaks stand, and the loop settles as it does without the resets.
TEST_F(AllocatorTest, RemapStreamsPeakingInTurnSettleThoughThePeaksAreReset) {
  caching_allocator alloc(device, remap_without_plan);
  const auto [calls, syncs] = calls_and_syncs_after_two(alloc, 8, [&] {
    alloc.reset_peak_stats();
    alloc.deallocate(alloc.allocate(16 * mib, a));
    alloc.deallocate(alloc.allocate(16 * mib, b));
  });
  EXPECT_EQ(calls, 0u) << "a reset peak made each stream's next growth a climb";
  EXPECT_EQ(syncs, 0u);
}

TEST_F(AllocatorTest, SmallRequestsEndOnAChunkBoundaryWithChunkEndPlacement) {
  // In a fresh small range, the first request ends on the first chunk boundary, so the rest of
  // the range starts on one; the next request goes into the chunk's space before it.
  const auto first_two = [&](small_block_placement placement) {
    caching_allocator alloc(device, allocator_options{.segments = segment_kind::expandable,
                                                      .small_placement = placement});
    const auto first = reinterpret_cast<std::uintptr_t>(alloc.allocate(512 * kib, a));
    const auto second = reinterpret_cast<std::uintptr_t>(alloc.allocate(512 * kib, a));
    alloc.deallocate(reinterpret_cast<void*>(first));
    alloc.deallocate(reinterpret_cast<void*>(second));
    return std::pair{first, second};
  };
  const auto [chunk_end_first, chunk_end_second] = first_two(small_block_placement::chunk_end);
  EXPECT_EQ(chunk_end_first + 512 * kib, chunk_end_second + 2 * mib);  // both in the first chunk
  const auto [start_first, start_second] = first_two(small_block_placement::start);
  EXPECT_EQ(start_second, start_first + 512 * kib);
}

TEST_F(AllocatorTest, StatsEqualARecount) {
  caching_allocator alloc(device, allocator_options{});
  std::vector<void*> live;
  std::int64_t requested = 0;
  std::int64_t rounded = 0;
  for (std::size_t i = 1; i <= 50; ++i) {
    live.push_back(alloc.allocate(i * 777, i % 2 == 0 ? StreamRef(a) : StreamRef(b)));
    requested += static_cast<std::int64_t>(i * 777);
    rounded += static_cast<std::int64_t>((i * 777 + 511) / 512 * 512);
  }
  const allocator_stats s = alloc.stats();
  EXPECT_EQ(s.allocation.current, 50);
  EXPECT_EQ(s.requested_bytes.current, requested);
  EXPECT_EQ(s.allocated_bytes.current, rounded);
  EXPECT_EQ(s.active_bytes.current, rounded);
  EXPECT_EQ(alloc.stats(a).allocation.current + alloc.stats(b).allocation.current, 50);
  for (void* p : live) alloc.deallocate(p);
  const allocator_stats after = alloc.stats();
  EXPECT_EQ(after.allocation.current, 0);
  EXPECT_EQ(after.allocated_bytes.current, 0);
  EXPECT_EQ(after.allocated_bytes.allocated, after.allocated_bytes.freed);
  EXPECT_EQ(after.allocation.allocated, 50u);
}

TEST_F(AllocatorTest, SnapshotListsSegmentsAndBlocks) {
  caching_allocator alloc(device, allocator_options{.segments = segment_kind::fixed});
  void* p = alloc.allocate(4 * kib, a);
  const std::string json = alloc.snapshot_json();
  EXPECT_NE(json.find("\"segments\":[{"), std::string::npos) << json;
  EXPECT_NE(json.find("\"address\":" + std::to_string(reinterpret_cast<std::uintptr_t>(p))), std::string::npos);
  EXPECT_NE(json.find("\"state\":\"live\""), std::string::npos);
  EXPECT_NE(json.find("\"reserved_bytes\":{\"current\":2097152"), std::string::npos) << json;
  alloc.deallocate(p);
}

TEST_F(AllocatorTest, HistoryIsAReplayableTrace) {
  caching_allocator alloc(device, allocator_options{.history_capacity = 2});
  void* p = alloc.allocate(4 * kib, a);
  alloc.deallocate(p);
  const std::string csv = alloc.history_csv();
  EXPECT_EQ(csv.rfind("action,addr,size,stream\n", 0), 0u);
  EXPECT_NE(csv.find("free_requested," + std::to_string(reinterpret_cast<std::uintptr_t>(p))), std::string::npos);
}

TEST(AllocConf, ParsesEveryKey) {
  const allocator_options o = parse_alloc_conf(
      "segments:fixed, cross_stream:never,small_request_limit:512KiB,small_segment:4MiB,large_segment:32MiB,"
      "expandable_reserve:1GiB,granularity:2MiB,history:100,expandable_growth:map_new,remap_slack_percent:5,"
      "small_placement:start");
  EXPECT_EQ(o.segments, segment_kind::fixed);
  EXPECT_EQ(o.reuse, cross_stream_reuse::never);
  EXPECT_EQ(o.small_request_limit, 512 * kib);
  EXPECT_EQ(o.small_segment_bytes, 4 * mib);
  EXPECT_EQ(o.large_segment_bytes, 32 * mib);
  EXPECT_EQ(o.expandable_reserve_bytes, 1024 * mib);
  EXPECT_EQ(o.history_capacity, 100u);
  EXPECT_EQ(o.growth, expandable_growth::map_new);
  EXPECT_EQ(o.remap_slack_percent, 5u);
  EXPECT_EQ(o.small_placement, small_block_placement::start);
}

TEST(AllocConf, RejectsUnknownKeysAndBadValues) {
  EXPECT_THROW((void)parse_alloc_conf("colour:blue"), usage_error);
  EXPECT_THROW((void)parse_alloc_conf("segments:maybe"), usage_error);
  EXPECT_THROW((void)parse_alloc_conf("expandable_growth:sometimes"), usage_error);
  try {
    (void)parse_alloc_conf("expandable_growth:stitch");
    ADD_FAILURE() << "expandable_growth:stitch accepted";
  } catch (const usage_error& removed) {
    EXPECT_NE(std::string(removed.what()).find("stitch was removed"), std::string::npos) << removed.what();
  }
  EXPECT_THROW((void)parse_alloc_conf("small_placement:middle"), usage_error);
  EXPECT_THROW((void)parse_alloc_conf("history:lots"), usage_error);
  EXPECT_THROW((void)parse_alloc_conf("granularity"), usage_error);
}

}  // namespace
}  // namespace streamsafe
