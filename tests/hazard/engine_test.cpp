// The engine through its public API: the ordering rules of GUIDE.md section 3, one at a time.
#include "streamsafe/hazard/engine.hpp"

#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <utility>
#include <vector>

#include "streamsafe/error.hpp"
#include "streamsafe/hazard/report_text.hpp"

namespace streamsafe::hazard {
namespace {

constexpr stream_id a{1};
constexpr stream_id b{2};
constexpr stream_id c{3};
constexpr event_id e1{1};

class EngineTest : public ::testing::Test {
 protected:
  engine model{policy::report};
  std::uint64_t line = 0;

  op_site at(std::string_view name) { return op_site{model.label(name, "t.cpp:1"), ++line}; }
  void write(stream_id s, byte_range r, std::string_view name = "w") { (void)model.access(s, {}, std::array{r}, at(name)); }
  void read(stream_id s, byte_range r, std::string_view name = "r") { (void)model.access(s, std::array{r}, {}, at(name)); }
  std::vector<hazard_kind> kinds() const {
    std::vector<hazard_kind> out;
    for (const auto& h : model.hazards()) out.push_back(h.kind);
    return out;
  }
};

TEST_F(EngineTest, DisjointHalvesOfOneBufferDoNotRace) {
  write(a, {0, 512});
  write(b, {512, 512});
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(EngineTest, PartialOverlapReportsExactlyTheSharedBytes) {
  write(a, {0, 512});
  read(b, {256, 512});
  ASSERT_EQ(kinds(), std::vector{hazard_kind::race});
  EXPECT_EQ(model.hazards()[0].range, (byte_range{256, 256}));
  EXPECT_EQ(model.hazards()[0].first.line, 1U);
  EXPECT_EQ(model.hazards()[0].second.line, 2U);
}

TEST_F(EngineTest, ConcurrentReadsDoNotRace) {
  read(a, {0, 64});
  read(b, {0, 64});
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(EngineTest, AWriteOrderedAfterOneReaderStillRacesWithTheOther) {
  read(a, {0, 64}, "read_a");
  read(b, {0, 64}, "read_b");
  model.event_record(e1, a, at("rec"));
  model.stream_wait_event(c, e1, at("wait"));
  write(c, {0, 64});
  ASSERT_EQ(kinds(), std::vector{hazard_kind::race});
  EXPECT_EQ(model.hazards()[0].first.op, "read_b");
}

TEST_F(EngineTest, OneOpConflictingOverSeveralPiecesIsOneFinding) {
  (void)model.access(a, {}, std::array{byte_range{0, 10}, byte_range{20, 10}}, at("two_pieces"));
  read(b, {0, 30});
  ASSERT_EQ(kinds(), std::vector{hazard_kind::race});
  EXPECT_EQ(model.hazards()[0].range, (byte_range{0, 30}));  // the hull of both pieces
}

TEST_F(EngineTest, EachPairOfOpsIsItsOwnFinding) {
  write(a, {0, 10}, "first_write");
  write(a, {20, 10}, "second_write");
  read(b, {0, 30});
  ASSERT_EQ(kinds(), (std::vector{hazard_kind::race, hazard_kind::race}));
  EXPECT_EQ(model.hazards()[0].range, (byte_range{0, 10}));
  EXPECT_EQ(model.hazards()[1].range, (byte_range{20, 10}));
}

TEST_F(EngineTest, ALaterRecordReplacesTheEventsClock) {
  write(a, {0, 64});
  model.event_record(e1, a, at("rec"));
  write(a, {64, 64});
  model.event_record(e1, a, at("rec_again"));
  model.stream_wait_event(b, e1, at("wait"));
  read(b, {0, 128});
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(EngineTest, EnqueueOrdersStreamOpsAfterTheHostsSyncs) {
  write(a, {0, 64});
  model.stream_sync(a, at("sync"));
  read(b, {0, 64});
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(EngineTest, DeviceSyncOrdersTheHostAfterEveryStream) {
  write(a, {0, 64});
  write(b, {64, 64});
  model.device_sync(at("device_sync"));
  (void)model.host_access(std::array{byte_range{0, 128}}, {}, at("host_read"));
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(EngineTest, HostReadBeforeSyncIsAHostRace) {
  write(a, {0, 64});
  (void)model.host_access(std::array{byte_range{0, 64}}, {}, at("host_read"));
  EXPECT_EQ(kinds(), std::vector{hazard_kind::host_race});
  EXPECT_EQ(model.hazards()[0].second.stream, "host");
}

TEST_F(EngineTest, StreamNamesAppearInReports) {
  model.name_stream(a, "producer");
  write(a, {0, 8});
  read(b, {0, 8});
  ASSERT_EQ(model.hazards().size(), 1U);
  EXPECT_EQ(model.hazards()[0].first.stream, "producer");
  EXPECT_EQ(model.hazards()[0].second.stream, "stream 2");
}

TEST_F(EngineTest, EnforceReturnsAndAppliesTheMissingWait) {
  model.set_mode(policy::enforce);
  write(a, {0, 64});
  const auto inserted = model.access(b, std::array{byte_range{0, 64}}, {}, at("r"));
  ASSERT_EQ(inserted.size(), 1U);
  EXPECT_EQ(inserted[0], (insertion{insertion_kind::stream_wait, b, a, 0}));
  EXPECT_EQ(model.inserted().stream_waits, 1U);
  const auto for_write = model.access(c, {}, std::array{byte_range{0, 64}}, at("w"));
  // unordered with a's write and with b's read: c waits on both, and nothing is reported
  EXPECT_EQ(for_write.size(), 2U);
  EXPECT_EQ(model.inserted().stream_waits, 3U);
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(EngineTest, EnforceInsertsTheMissingRecordStreamAtTheFree) {
  model.set_mode(policy::enforce);
  model.alloc(4096, 64, a, at("alloc"));
  write(a, {4096, 64});
  model.event_record(e1, a, at("rec"));
  model.stream_wait_event(b, e1, at("wait"));
  read(b, {4096, 64});
  const auto inserted = model.free(4096, at("free"));
  ASSERT_EQ(inserted.size(), 1U);
  EXPECT_EQ(inserted[0], (insertion{insertion_kind::record_stream, {}, b, 4096}));
  model.alloc(4096, 64, a, at("alloc"));
  write(a, {4096, 64});
  EXPECT_TRUE(model.hazards().empty());
  EXPECT_EQ(model.inserted().total(), 1U);
}

// The release point orders the new allocation's stream only (GUIDE.md section 3).
class ReuseTest : public EngineTest {
 protected:
  static constexpr std::uint64_t block = 4096;
  void alloc_write_free_realloc() {
    model.name_stream(a, "main");
    model.name_stream(b, "side");
    model.alloc(block, 64, a, at("alloc"));
    write(a, {block, 64}, "old_write");
    (void)model.free(block, at("free"));
    model.alloc(block, 64, a, op_site{model.label("alloc", "t.cpp:9"), ++line});
  }
  // A block of a's that b writes after a wait and records itself on (the release point covers
  // b's write), then freed.
  void b_uses_recorded_block_then_free() {
  model.alloc(block, 64, a, at("alloc"));
  write(a, {block, 64}, "a_write");
  model.event_record(e1, a, at("rec"));
  model.stream_wait_event(b, e1, at("wait"));
  write(b, {block, 64}, "b_write");
  model.record_stream(block, b, at("record_stream"));
  (void)model.free(block, at("free"));
  }
};

TEST_F(ReuseTest, ABlockReusedOnAnotherStreamWithoutAWaitIsAReuseRace) {
  alloc_write_free_realloc();
  write(b, {block, 64}, "side_write");
  ASSERT_EQ(kinds(), std::vector{hazard_kind::reuse_race});
  const hazard& found = model.hazards()[0];
  EXPECT_EQ(found.first.op, "old_write");
  EXPECT_EQ(found.second.stream, "side");
  EXPECT_EQ(found.alloc_op.stream, "main");
  const std::string fix = fix_text(found);
  EXPECT_NE(fix.find("make `side` wait on an event recorded on `main` after the allocation at t.cpp:9"), std::string::npos) << fix;
  EXPECT_NE(fix.find("or allocate the block on `side`"), std::string::npos) << fix;
}

TEST_F(ReuseTest, AReadOnAnotherStreamRacesWithTheOldWriteToo) {
  alloc_write_free_realloc();
  read(b, {block, 64}, "side_read");
  EXPECT_EQ(kinds(), std::vector{hazard_kind::reuse_race});
}

TEST_F(ReuseTest, TheAllocationStreamIsOrderedByTheReleasePoint) {
  alloc_write_free_realloc();
  write(a, {block, 64}, "main_write");
  read(b, {block, 64}, "side_read");  // races with main_write (a plain race), not with the old write
  EXPECT_EQ(kinds(), std::vector{hazard_kind::race});
}

TEST_F(ReuseTest, AWaitOnAnEventRecordedAfterTheAllocationOrdersTheOtherStream) {
  alloc_write_free_realloc();
  model.event_record(e1, a, at("rec"));
  model.stream_wait_event(b, e1, at("wait"));
  write(b, {block, 64}, "side_write");
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(ReuseTest, AWaitRecordedBeforeTheAllocationDoesNotOrderARecordedStreamsOldAccess) {
  b_uses_recorded_block_then_free();
  constexpr event_id e2{2};
  write(a, {0, 64}, "a_other");
  model.event_record(e2, a, at("rec_before_alloc"));
  model.alloc(block, 64, a, at("alloc"));
  model.stream_wait_event(c, e2, at("wait_too_early"));
  write(c, {block, 64}, "c_write");
  ASSERT_EQ(kinds(), std::vector{hazard_kind::reuse_race});
  EXPECT_EQ(model.hazards()[0].first.op, "b_write");
}

TEST_F(ReuseTest, AHostSyncBeforeTheFreeOrdersEveryLaterUse) {
  model.alloc(block, 64, a, at("alloc"));
  write(a, {block, 64}, "old_write");
  model.stream_sync(a, at("sync"));
  (void)model.free(block, at("free"));
  model.alloc(block, 64, a, at("alloc"));
  write(b, {block, 64}, "side_write");
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(ReuseTest, EnforceMakesTheOtherStreamWaitOnTheAllocationStream) {
  model.set_mode(policy::enforce);
  alloc_write_free_realloc();
  const auto inserted = model.access(b, {}, std::array{byte_range{block, 64}}, at("side_write"));
  ASSERT_EQ(inserted.size(), 1U);
  EXPECT_EQ(inserted[0], (insertion{insertion_kind::stream_wait, b, a, 0}));
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(ReuseTest, EnforceWaitsOnTheAllocationStreamNotTheOldUser) {
  model.set_mode(policy::enforce);
  b_uses_recorded_block_then_free();
  model.alloc(block, 64, a, at("alloc"));
  const auto inserted = model.access(c, {}, std::array{byte_range{block, 64}}, at("c_write"));
  ASSERT_EQ(inserted.size(), 1U);
  EXPECT_EQ(inserted[0], (insertion{insertion_kind::stream_wait, c, a, 0}));
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(EngineTest, ARepeatedBugIsReportedOnceWithItsCount) {
  for (int i = 0; i < 100; ++i) {
    write(a, {0, 64}, "fill");
    read(b, {0, 64}, "consume");
    model.device_sync(at("device_sync"));
  }
  ASSERT_EQ(kinds(), std::vector{hazard_kind::race});
  EXPECT_EQ(model.hazards()[0].count, 100U);
  EXPECT_EQ(model.hazards()[0].second.line, 2U);  // the first time it was found
  EXPECT_NE(describe(model.hazards()[0]).find("seen:   100 times"), std::string::npos);
  EXPECT_NE(to_json(model.hazards()[0]).find("\"count\":100"), std::string::npos);
}

TEST_F(EngineTest, TheSinkSeesARepeatedBugOnce) {
  std::vector<hazard> seen;
  model.on_hazard([&](const hazard& h) { seen.push_back(h); });
  for (int i = 0; i < 10; ++i) {
    write(a, {0, 64}, "fill");
    read(b, {0, 64}, "consume");
    model.device_sync(at("device_sync"));
  }
  EXPECT_EQ(seen.size(), 1U);
}

TEST_F(EngineTest, TheSameCallSitesOnTwoStreamPairsAreTwoReports) {
  constexpr stream_id d{4};
  for (const auto& [writer, reader] : {std::pair{a, b}, std::pair{c, d}}) {
    write(writer, {0, 64}, "fill");
    read(reader, {0, 64}, "consume");
    model.device_sync(at("device_sync"));
  }
  ASSERT_EQ(kinds(), (std::vector{hazard_kind::race, hazard_kind::race}));
  EXPECT_EQ(model.hazards()[1].first.stream, "stream 3");
  EXPECT_EQ(model.hazards()[1].second.stream, "stream 4");
}

// enforce as a transaction: plans change nothing; what is applied is what was carried out.
class EngineTransactionTest : public EngineTest {
 protected:
  EngineTransactionTest() { model.set_mode(policy::enforce); }
  static constexpr byte_range bytes{0, 64};
};

TEST_F(EngineTransactionTest, APlannedWaitIsMissingUntilApplied) {
  write(a, bytes, "fill");
  const auto planned = model.plan_access(b, std::array{bytes}, {});
  ASSERT_EQ(planned, (std::vector{insertion{insertion_kind::stream_wait, b, a, 0}}));
  EXPECT_EQ(model.plan_access(b, std::array{bytes}, {}), planned);  // planning applied nothing
  EXPECT_EQ(model.inserted().total(), 0U);
  model.apply(planned);
  EXPECT_TRUE(model.plan_access(b, std::array{bytes}, {}).empty());
  EXPECT_EQ(model.inserted().stream_waits, 1U);
  const op_site site = at("consume");
  model.check_access(b, std::array{bytes}, {}, site);
  model.commit_access(b, std::array{bytes}, {}, site);
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(EngineTransactionTest, APlannedFreeLeavesTheBlockLive) {
  model.alloc(4096, 64, a, at("alloc"));
  read(b, {4096, 64}, "side_read");
  const auto planned = model.plan_free(4096);
  ASSERT_EQ(planned, (std::vector{insertion{insertion_kind::record_stream, {}, b, 4096}}));
  EXPECT_NO_THROW(model.record_stream(4096, c, at("record_stream")));  // still live
  EXPECT_EQ(model.plan_free(4096), planned);
  model.apply(planned);
  model.commit_free(4096, at("free"));
  EXPECT_EQ(model.inserted().record_streams, 1U);
  EXPECT_THROW((void)model.plan_free(4096), usage_error);
}

TEST_F(EngineTransactionTest, AThrowingSinkLeavesTheAccessUnrecorded) {
  model.set_mode(policy::report);
  model.on_hazard([](const hazard&) { throw std::runtime_error("sink"); });
  write(a, bytes, "first");
  EXPECT_THROW(write(b, bytes, "racing"), std::runtime_error);
  model.stream_sync(a, at("sync"));
  EXPECT_NO_THROW(write(a, bytes, "after_sync"));  // b's write never happened: nothing to race
}

TEST_F(EngineTest, ADestroyedEventIsForgotten) {
  write(a, {0, 64});
  model.event_record(e1, a, at("rec"));
  EXPECT_EQ(model.events_tracked(), 1U);
  model.event_destroy(e1, at("event_destroy"));
  EXPECT_EQ(model.events_tracked(), 0U);
  model.stream_wait_event(b, e1, at("wait"));
  EXPECT_EQ(kinds(), std::vector{hazard_kind::wait_unrecorded});
}

// Slot recycling (docs/hazards.md, "Bounded memory"): short-lived streams do not grow the clocks,
// and a recycled slot hides no race.
class StreamDestroyTest : public EngineTest {
 protected:
  // A short-lived stream: one write to its own bytes, seen finished by the host, destroyed.
  void short_lived(std::uint64_t id, std::uint64_t bytes) {
    write(stream_id{id}, {bytes, 64}, "short_write");
    model.stream_sync(stream_id{id}, at("sync"));
    model.stream_destroy(stream_id{id}, at("stream_destroy"));
  }
};

TEST_F(StreamDestroyTest, ShortLivedStreamsReuseTheirSlots) {
  write(a, {0, 64});
  for (std::uint64_t i = 0; i < 1000; ++i) short_lived(100 + i, 4096 + 64 * (i % 4));
  EXPECT_EQ(model.stream_slots(), 2U);  // a's and one recycled slot
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(StreamDestroyTest, ADestroyedStreamsUnfinishedWorkStillRaces) {
  write(a, {0, 64}, "last_write");
  model.stream_destroy(a, at("stream_destroy"));
  write(stream_id{9}, {0, 64}, "new_write");  // a new stream: a's write may still be running
  ASSERT_EQ(kinds(), std::vector{hazard_kind::race});
  EXPECT_EQ(model.hazards()[0].first.op, "last_write");
  EXPECT_EQ(model.hazards()[0].first.stream, "stream 1 (destroyed)");
  EXPECT_EQ(model.stream_slots(), 2U);  // a's slot was not recycled
}

TEST_F(StreamDestroyTest, ARecycledSlotDoesNotOrderItsNewStreamAfterAnything) {
  write(a, {0, 64});
  model.event_record(e1, a, at("rec_on_a"));
  model.stream_sync(a, at("sync"));
  model.stream_destroy(a, at("stream_destroy"));
  constexpr stream_id recycled{9};
  write(recycled, {4096, 64}, "recycled_write");
  EXPECT_EQ(model.stream_slots(), 1U);  // recycled took a's slot
  // b knows all of a's work (through the host; the wait on a's event adds nothing), none of
  // recycled's: recycled continues a's epochs without inheriting what b knows of them.
  model.stream_wait_event(b, e1, at("wait_on_old_event"));
  read(b, {4096, 64}, "read");
  ASSERT_EQ(kinds(), (std::vector{hazard_kind::redundant_wait, hazard_kind::race}));
  EXPECT_EQ(model.hazards()[1].first.stream, "stream 9");
}

TEST_F(StreamDestroyTest, ASlotIsNotRecycledWhileALiveAllocationNamesIt) {
  model.alloc(4096, 64, a, at("alloc"));
  write(a, {4096, 64});
  model.stream_sync(a, at("sync"));
  model.stream_destroy(a, at("stream_destroy"));
  write(b, {0, 64});
  EXPECT_EQ(model.stream_slots(), 2U);
  (void)model.free(4096, at("free"));
  write(c, {128, 64});
  EXPECT_EQ(model.stream_slots(), 2U);  // c took a's slot once the free let go of it
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(EngineTest, OffTracksNothing) {
  model.set_mode(policy::off);
  write(a, {0, 64});
  read(b, {0, 64});
  model.free(12345, at("free"));  // not even checked
  EXPECT_TRUE(model.hazards().empty());
  EXPECT_EQ(model.shadow_segments(), 0U);
}

TEST_F(EngineTest, SinkReceivesHazardsInsteadOfTheCollection) {
  std::vector<hazard> seen;
  model.on_hazard([&](const hazard& h) { seen.push_back(h); });
  write(a, {0, 64});
  read(b, {0, 64});
  EXPECT_EQ(seen.size(), 1U);
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(EngineTest, LifetimeErrorsAreUsageErrors) {
  model.alloc(4096, 64, a, at("alloc"));
  EXPECT_THROW(model.alloc(4096 + 32, 64, a, at("alloc")), usage_error);
  EXPECT_THROW(model.alloc(4096 - 32, 64, a, at("alloc")), usage_error);
  EXPECT_THROW(model.free(4096 + 8, at("free")), usage_error);
  EXPECT_THROW(model.record_stream(9999, b, at("record_stream")), usage_error);
  EXPECT_NO_THROW(model.record_stream(4096 + 8, b, at("record_stream")));
  EXPECT_NO_THROW(model.free(4096, at("free")));
  EXPECT_THROW(model.free(4096, at("free")), usage_error);
}

TEST_F(EngineTest, RepeatedAccessesKeepTheShadowSmall) {
  for (int i = 0; i < 100; ++i) {
    write(a, {0, 64});
    read(a, {64, 64});
  }
  EXPECT_EQ(model.shadow_segments(), 2U);
}

}  // namespace
}  // namespace streamsafe::hazard
