// The engine through its public API: the ordering rules of GUIDE.md section 3, one at a time.
#include "streamsafe/hazard/engine.hpp"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "streamsafe/error.hpp"

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
