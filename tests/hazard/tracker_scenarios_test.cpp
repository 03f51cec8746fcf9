// The scenarios of issue 4 as programs on the library (their op-log twins are in oplogs/):
// on sim, `report` names the right kind, and `enforce` makes the buggy program give the fixed
// program's output under many seeds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "backends.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/hazard/tracker.hpp"

namespace streamsafe::testing {
namespace {

using hazard::hazard_kind;
using hazard::policy;

constexpr std::size_t count = 256;
constexpr std::size_t bytes = count * sizeof(std::uint32_t);

/// What one run of a scenario gives: the values the program ends up with, and the findings.
struct outcome {
  std::vector<std::uint32_t> values;
  std::vector<hazard_kind> kinds;
};

/// A scenario: a program over a device, a tracker and a few device arrays; returns its values.
using program = std::function<std::vector<std::uint32_t>(Device&, hazard::tracker&, std::uint32_t* const*)>;

outcome run(const program& body, policy mode, std::uint64_t seed = 1) {
  Device device = Device::sim({.seed = seed});
  hazard::tracker tracker(device, mode);
  std::uint32_t* arrays[3];
  for (auto*& a : arrays) {
    a = static_cast<std::uint32_t*>(device.allocate(bytes));
    std::fill(a, a + count, 0u);
  }
  outcome result{body(device, tracker, arrays), {}};
  device.synchronize();
  for (auto* a : arrays) device.deallocate(a);
  for (const auto& h : tracker.hazards()) result.kinds.push_back(h.kind);
  return result;
}

/// report finds `expected`; enforce reproduces `correct` with no hazard left, for many seeds.
void expect_caught_and_fixed(const program& buggy, const std::vector<hazard_kind>& expected,
                             const std::vector<std::uint32_t>& correct) {
  EXPECT_EQ(run(buggy, policy::report).kinds, expected);
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto enforced = run(buggy, policy::enforce, seed);
    EXPECT_EQ(enforced.values, correct) << "seed " << seed;
    EXPECT_THAT(enforced.kinds, ::testing::Each(::testing::AnyOf(hazard_kind::wait_unrecorded,
                                                                 hazard_kind::redundant_wait)))
        << "seed " << seed;
  }
}

std::vector<std::uint32_t> filled(std::uint32_t value) { return std::vector<std::uint32_t>(count, value); }

TEST(TrackerScenarios, RecordStreamPresentButWaitMissing) {
  const program buggy = [](Device& device, hazard::tracker& t, std::uint32_t* const* a) {
    Stream main(device, slow_stream("main"));
    Stream side(device, {.name = "side"});
    t.on(main).writes(a[0], bytes).launch(slow_fill_kernel(a[0], count, 5));
    t.on(side).reads(a[0], bytes).writes(a[1], bytes).launch(slow_copy_kernel(a[0], a[1], count));
    return read_back(side, a[1], count);
  };
  expect_caught_and_fixed(buggy, {hazard_kind::race}, filled(5));
}

TEST(TrackerScenarios, EventRecordedBeforeTheWriteItShouldCover) {
  const program buggy = [](Device& device, hazard::tracker& t, std::uint32_t* const* a) {
    Stream producer(device, slow_stream("producer"));
    Stream consumer(device, {.name = "consumer"});
    Event written(device);
    written.record(producer);  // the bug: before the write
    t.on(producer).writes(a[0], bytes).launch(slow_fill_kernel(a[0], count, 3));
    consumer.wait(written);
    t.on(consumer).reads(a[0], bytes).writes(a[1], bytes).launch(double_kernel(a[0], a[1], count));
    return read_back(consumer, a[1], count);
  };
  // The wait covers nothing the consumer needs, so it is also reported as redundant.
  expect_caught_and_fixed(buggy, {hazard_kind::redundant_wait, hazard_kind::race}, filled(6));
}

TEST(TrackerScenarios, WaitOnANeverRecordedEvent) {
  const program buggy = [](Device& device, hazard::tracker& t, std::uint32_t* const* a) {
    Stream producer(device, slow_stream("producer"));
    Stream consumer(device, {.name = "consumer"});
    Event never(device);
    t.on(producer).writes(a[0], bytes).launch(slow_fill_kernel(a[0], count, 4));
    consumer.wait(never);  // a no-op in CUDA
    t.on(consumer).reads(a[0], bytes).writes(a[1], bytes).launch(double_kernel(a[0], a[1], count));
    return read_back(consumer, a[1], count);
  };
  expect_caught_and_fixed(buggy, {hazard_kind::wait_unrecorded, hazard_kind::race}, filled(8));
}

TEST(TrackerScenarios, HostOverwritesAPinnedBufferBeforeItsUploadRan) {
  const program buggy = [](Device& device, hazard::tracker& t, std::uint32_t* const* a) {
    Stream upload(device, slow_stream("h2d"));
    auto* pinned = static_cast<std::uint32_t*>(device.allocate_pinned(bytes));
    t.host_writes(pinned, bytes);
    std::fill(pinned, pinned + count, 1u);
    t.on(upload).copy(a[0], pinned, bytes);
    t.host_writes(pinned, bytes);  // the bug: the upload may not have run yet
    std::fill(pinned, pinned + count, 2u);
    auto values = read_back(upload, a[0], count);
    device.deallocate_pinned(pinned);
    return values;
  };
  expect_caught_and_fixed(buggy, {hazard_kind::host_race}, filled(1));
}

TEST(TrackerScenarios, ViewsAtOffsetsConflictOnlyWhereTheyOverlap) {
  const auto halves = [](std::size_t second_offset) {
    return [second_offset](Device& device, hazard::tracker& t, std::uint32_t* const* a) {
      Stream left(device, {.name = "left"});
      Stream right(device, slow_stream("right"));
      t.on(left).fill(a[0], 1, bytes / 2);
      t.on(right).fill(reinterpret_cast<std::uint8_t*>(a[0]) + second_offset, 2, bytes / 2);
      device.synchronize();
      return std::vector<std::uint32_t>{};
    };
  };
  EXPECT_TRUE(run(halves(bytes / 2), policy::report).kinds.empty()) << "disjoint halves never race";
  EXPECT_EQ(run(halves(bytes / 4), policy::report).kinds, std::vector<hazard_kind>{hazard_kind::race});
}

TEST(TrackerScenarios, FourStreamChainDoneRightIsClean) {
  const program chain = [](Device& device, hazard::tracker& t, std::uint32_t* const* a) {
    Stream copy(device, slow_stream("copy"));
    Stream preprocess(device, {.name = "preprocess"});
    Stream compute(device, slow_stream("compute"));
    Stream download(device, {.name = "download"});
    auto* pinned = static_cast<std::uint32_t*>(device.allocate_pinned(bytes));
    std::fill(pinned, pinned + count, 3u);
    t.on(copy).copy(a[0], pinned, bytes);
    preprocess.wait(copy);
    t.on(preprocess).reads(a[0], bytes).writes(a[1], bytes).launch(double_kernel(a[0], a[1], count));
    compute.wait(preprocess);
    t.on(compute).reads(a[1], bytes).writes(a[2], bytes).launch(double_kernel(a[1], a[2], count));
    download.wait(compute);
    t.on(download).copy(pinned, a[2], bytes);
    download.synchronize();
    t.host_reads(pinned, bytes);
    std::vector<std::uint32_t> values(pinned, pinned + count);
    device.deallocate_pinned(pinned);
    return values;
  };
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const auto result = run(chain, policy::report, seed);
    EXPECT_TRUE(result.kinds.empty()) << "seed " << seed;
    EXPECT_EQ(result.values, filled(12)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace streamsafe::testing
