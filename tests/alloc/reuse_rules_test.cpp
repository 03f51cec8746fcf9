// The caching allocator's safety rules with device work still queued at the moment of reuse,
// unmap or release (reuse_oracle.hpp), for every segment kind and growth policy: same-stream
// reuse, record_stream's hold and release, empty_cache, growth, and, on a small sim device,
// borrowing and the out-of-memory ladder.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backends.hpp"
#include "reuse_oracle.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe {
namespace {

using testing::reuse_oracle;
using testing::test_backend;

constexpr std::size_t kib = 1024;
constexpr std::size_t mib = 1024 * kib;
constexpr std::uint32_t old_data = 0x0DDA7A00;   // what the old user wrote and reads
constexpr std::uint32_t late_data = 0x1A7E1A7E;  // the old user's last, queued write
constexpr std::uint32_t new_data = 0x0E3D0E3D;   // the new owner's

struct policy_case {
  const char* name;
  allocator_options options;
};

const policy_case policies[] = {
    {"Fixed", {.segments = segment_kind::fixed}},
    {"Remap", {.segments = segment_kind::expandable, .growth = expandable_growth::remap, .remap_slack_percent = 0}},
    {"MapNew", {.segments = segment_kind::expandable, .growth = expandable_growth::map_new}},
};

// Under pressure, remap with no slack would move the other stream's free chunks (the device's
// budget) before growth fails: with room for two peaks it maps, fails, and borrows or climbs the
// ladder, the paths ReuseUnderPressure checks.
const policy_case policies_under_pressure[] = {
    policies[0],
    {"Remap", {.segments = segment_kind::expandable, .growth = expandable_growth::remap, .remap_slack_percent = 200}},
    policies[2],
};

void PrintTo(const policy_case& policy, std::ostream* out) { *out << policy.name; }

using rule_param = std::tuple<test_backend, policy_case>;

std::string rule_name(const ::testing::TestParamInfo<rule_param>& info) {
  return testing::to_string(std::get<0>(info.param)) + std::get<1>(info.param).name;
}

/// A device, the allocator under test, two normal streams and one that lags (starved on sim).
class ReuseFixture : public ::testing::TestWithParam<rule_param> {
 protected:
  void start(std::size_t sim_capacity) {
    const test_backend backend = std::get<0>(GetParam());
    if (backend == test_backend::cuda && Device::cuda_device_count() == 0) {
      GTEST_SKIP() << "no CUDA device here (the cuda variant runs on a GPU machine)";
    }
    parts_.emplace(testing::make_device(backend, 1, sim_capacity), std::get<1>(GetParam()).options);
  }
  caching_allocator& alloc() { return parts_->alloc; }
  reuse_oracle& oracle() { return parts_->oracle; }
  StreamRef a() { return parts_->a; }
  StreamRef b() { return parts_->b; }
  StreamRef late() { return parts_->late; }
  /// The next owner allocates `bytes` on `stream` and writes its data; once the device is idle,
  /// its data and every late read are checked (reuse_oracle::settle).
  ::testing::AssertionResult next_owner_keeps_its_data(StreamRef stream, std::size_t bytes) {
    void* q = alloc().allocate(bytes, stream);
    oracle().claim(stream, q, bytes, new_data);
    ::testing::AssertionResult verdict = oracle().settle();
    alloc().deallocate(q);
    return verdict;
  }

  /// `owner` writes the block's data; `late` reads it and writes over it, queued behind.
  void keep_late_busy(StreamRef owner, void* p, std::size_t bytes) {
    reuse_oracle::write(owner, p, bytes, old_data);
    late().wait(owner);
    oracle().late_read(late(), p, bytes, old_data);
    oracle().late_write(late(), p, bytes, late_data);
  }

 private:
  struct parts {
    parts(const Device& device, const allocator_options& options)
        : oracle(device),
          a(device, {.name = "a"}),
          b(device, {.name = "b"}),
          late(device, testing::slow_stream("late")),
          alloc(device, options) {}
    reuse_oracle oracle;  // last: its checks run while the rest still lives
    Stream a;
    Stream b;
    Stream late;
    caching_allocator alloc;
  };
  std::optional<parts> parts_;
};

// On every backend: a device with room, so nothing is borrowed and nothing runs out.
class ReuseRules : public ReuseFixture {
 protected:
  void SetUp() override { start(64 * mib); }
};

TEST_P(ReuseRules, SameStreamReuseFollowsTheLastUse) {
  void* p = alloc().allocate(64 * kib, late());
  oracle().late_write(late(), p, 64 * kib, late_data);
  alloc().deallocate(p);
  void* q = alloc().allocate(64 * kib, late());
  EXPECT_EQ(p, q) << "a same-stream free is reused at once";
  oracle().claim(late(), q, 64 * kib, new_data);
  EXPECT_TRUE(oracle().settle());
  alloc().deallocate(q);
}

TEST_P(ReuseRules, RecordStreamHoldsTheBlockUntilTheRecordedStreamIsDone) {
  void* p = alloc().allocate(64 * kib, a());
  keep_late_busy(a(), p, 64 * kib);
  alloc().record_stream(p, late());
  alloc().deallocate(p);
  alloc().process_pending_frees();
  EXPECT_TRUE(next_owner_keeps_its_data(a(), 64 * kib));
}

TEST_P(ReuseRules, ABlockRecordedOnTwoStreamsWaitsForBoth) {
  void* p = alloc().allocate(64 * kib, a());
  alloc().record_stream(p, b());  // b is done with it at once
  keep_late_busy(a(), p, 64 * kib);
  alloc().record_stream(p, late());
  alloc().deallocate(p);
  b().synchronize();
  alloc().process_pending_frees();
  EXPECT_TRUE(next_owner_keeps_its_data(a(), 64 * kib));
}

TEST_P(ReuseRules, EmptyCacheReleasesAPendingFreeOnlyAfterItsRecordedStream) {
  void* p = alloc().allocate(4 * mib, a());
  keep_late_busy(a(), p, 4 * mib);
  alloc().record_stream(p, late());
  alloc().deallocate(p);
  alloc().empty_cache();  // the device may hand the memory out again from here on
  EXPECT_TRUE(next_owner_keeps_its_data(b(), 4 * mib));
}

TEST_P(ReuseRules, EmptyCacheReleasesACachedBlockOnlyAfterItsStreamsWork) {
  void* p = alloc().allocate(4 * mib, late());
  reuse_oracle::write(late(), p, 4 * mib, old_data);
  oracle().late_read(late(), p, 4 * mib, old_data);
  oracle().late_write(late(), p, 4 * mib, late_data);
  alloc().deallocate(p);  // cached at once: the stream's own order covers its queued work
  alloc().empty_cache();
  EXPECT_TRUE(next_owner_keeps_its_data(b(), 4 * mib));
}

// remap unmaps the hole's chunks to map them where the larger block goes, with the hole's last
// write still queued on the stream.
TEST_P(ReuseRules, GrowthNeverUnmapsWhatQueuedWorkStillUses) {
  void* hole = alloc().allocate(8 * mib, late());
  void* kept = alloc().allocate(4 * mib, late());
  oracle().late_write(late(), hole, 8 * mib, late_data);
  alloc().deallocate(hole);
  void* bigger = alloc().allocate(12 * mib, late());
  void* next = alloc().allocate(6 * mib, late());
  void* small = alloc().allocate(64 * kib, late());
  for (auto [p, bytes] : {std::pair{bigger, 12 * mib}, {next, 6 * mib}, {small, 64 * kib}, {kept, 4 * mib}}) {
    oracle().claim(late(), p, bytes, new_data);
  }
  EXPECT_TRUE(oracle().settle());
  for (void* p : {bigger, next, small, kept}) alloc().deallocate(p);
}

// remap holds a stream climbing past its own peak to the device's budget: it takes the chunks
// another stream freed, but only once that stream's work on them is done; with its last read and
// write still queued, they stay where they are.
TEST_P(ReuseRules, GrowthTakesAnotherStreamsChunksOnlyOnceItsQueuedWorkIsDone) {
  const bool remap = std::string(std::get<1>(GetParam()).name) == "Remap";
  void* p = alloc().allocate(8 * mib, late());
  reuse_oracle::write(late(), p, 8 * mib, old_data);
  oracle().late_read(late(), p, 8 * mib, old_data);
  oracle().late_write(late(), p, 8 * mib, late_data);
  alloc().deallocate(p);  // cached on late's stream at once
  void* q = alloc().allocate(8 * mib, a());
  oracle().claim(a(), q, 8 * mib, new_data);
  EXPECT_TRUE(oracle().settle());
  alloc().deallocate(q);
  if (remap) {
    EXPECT_EQ(alloc().stats().num_host_syncs, 0u) << "a's growth waited for late's work";
    // Every stream idle now: b's climb takes their chunks instead of mapping 8 MiB more.
    void* r = alloc().allocate(8 * mib, b());
    EXPECT_EQ(alloc().stats().reserved_bytes.current, static_cast<std::int64_t>(8 * mib));
    alloc().deallocate(r);
  }
}

// Rounds of allocations with frees between, empty_cache after each: what empty_cache gave back
// must be gone from every mapping, so every later block keeps its own bytes.
TEST_P(ReuseRules, BlocksAllocatedAfterEmptyCacheKeepTheirOwnBytes) {
  std::mt19937_64 rng(3);
  std::uint32_t value = 0xB10C0000;
  for (int round = 0; round < 3; ++round) {
    std::vector<std::pair<void*, std::size_t>> kept;
    for (int i = 0; i < 16; ++i) {
      const std::size_t bytes = (1 + rng() % 10) * 256 * kib;
      void* p = alloc().allocate(bytes, late());
      if (rng() % 2 == 0) {
        reuse_oracle::write(late(), p, bytes, ++value);
        alloc().deallocate(p);
      } else {
        oracle().claim(late(), p, bytes, ++value);
        kept.emplace_back(p, bytes);
      }
    }
    EXPECT_TRUE(oracle().settle()) << "round " << round;
    for (const auto& [p, bytes] : kept) alloc().deallocate(p);
    alloc().empty_cache();
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, ReuseRules,
                         ::testing::Combine(::testing::Values(test_backend::sim_deterministic,
                                                              test_backend::sim_threaded, test_backend::cuda),
                                            ::testing::ValuesIn(policies)),
                         rule_name);

// Sim only: a device of 8 MiB, so a stream that needs 6 MiB more must borrow or go down the
// out-of-memory ladder.
class ReuseUnderPressure : public ReuseFixture {
 protected:
  void SetUp() override { start(8 * mib); }
  static constexpr std::size_t block_bytes = 6 * mib;
};

TEST_P(ReuseUnderPressure, ABorrowerWaitsForTheLendersQueuedWork) {
  void* p = alloc().allocate(block_bytes, late());
  reuse_oracle::write(late(), p, block_bytes, old_data);
  oracle().late_read(late(), p, block_bytes, old_data);
  oracle().late_write(late(), p, block_bytes, late_data);
  alloc().deallocate(p);
  void* q = alloc().allocate(block_bytes, b());
  ASSERT_EQ(p, q) << "the device is full: b borrows the block late's stream cached";
  EXPECT_EQ(alloc().stats().num_cross_stream_reuses, 1u);
  oracle().claim(b(), q, block_bytes, new_data);
  EXPECT_TRUE(oracle().settle());
  alloc().deallocate(q);
}

TEST_P(ReuseUnderPressure, ALentBlockGoesHomeOnlyAfterTheBorrowersWork) {
  void* p = alloc().allocate(block_bytes, a());
  alloc().deallocate(p);
  void* borrowed = alloc().allocate(block_bytes, late());
  ASSERT_EQ(p, borrowed);
  oracle().late_write(late(), borrowed, block_bytes, late_data);
  alloc().deallocate(borrowed);
  EXPECT_TRUE(next_owner_keeps_its_data(a(), block_bytes));
}

TEST_P(ReuseUnderPressure, TheLadderReleasesACachedBlockOnlyAfterItsStreamsWork) {
  void* p = alloc().allocate(block_bytes, late());
  oracle().late_write(late(), p, block_bytes, late_data);
  alloc().deallocate(p);
  EXPECT_TRUE(next_owner_keeps_its_data(b(), block_bytes + mib));  // larger: no borrowing, the cache must go
  EXPECT_GE(alloc().stats().num_alloc_retries, 1u);
}

TEST_P(ReuseUnderPressure, TheLadderWaitsForPendingFreesBeforeReusingThem) {
  void* p = alloc().allocate(block_bytes, a());
  keep_late_busy(a(), p, block_bytes);
  alloc().record_stream(p, late());
  alloc().deallocate(p);
  EXPECT_TRUE(next_owner_keeps_its_data(b(), block_bytes + mib));
  EXPECT_GE(alloc().stats().num_alloc_retries, 1u);
}

INSTANTIATE_TEST_SUITE_P(Policies, ReuseUnderPressure,
                         ::testing::Combine(::testing::Values(test_backend::sim_deterministic, test_backend::sim_threaded),
                                            ::testing::ValuesIn(policies_under_pressure)),
                         rule_name);

}  // namespace
}  // namespace streamsafe
