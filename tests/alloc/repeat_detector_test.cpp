// The repeat detector finds a workload's period and the point of least live memory in it, the
// offset planner packs a period's blocks without two live ones sharing bytes, and the occupancy
// tree names who held a block's bytes before it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "alloc/occupancy_tree.hpp"
#include "alloc/offset_planner.hpp"
#include "alloc/repeat_detector.hpp"
#include "failing_operator_new.hpp"

namespace streamsafe::detail {
namespace {

/// One iteration of a training-loop-like workload: activations allocated in a forward pass and
/// freed in reverse in the backward pass, a few temporaries freed at once; sizes vary.
struct loop_shape {
  std::vector<std::size_t> sizes;
};

loop_shape random_loop(unsigned seed, std::size_t layers) {
  std::mt19937 rng(seed);
  loop_shape shape;
  for (std::size_t i = 0; i < layers; ++i) shape.sizes.push_back(512 * (1 + rng() % 4096));
  return shape;
}

class feeder {
 public:
  explicit feeder(repeat_detector& d) : d_(d) {}
  std::uint64_t alloc(std::size_t bytes, std::uint64_t stream = 1) {
    d_.note_alloc(++seq_, bytes, stream_id{stream}, calls);
    return seq_;
  }
  /// Frees the block of request `allocated_at`, which lay at `address_of(allocated_at)`.
  void free(std::uint64_t allocated_at) { d_.note_free(++seq_, allocated_at, calls, address_of(allocated_at)); }
  /// A pool's placement: the same block of every iteration at the same address.
  [[nodiscard]] std::uintptr_t address_of(std::uint64_t sequence) const { return 0x100000 + 512 * (sequence % period_hint); }
  std::uint64_t period_hint = 1;
  /// Runs one iteration; the period if the detector gave one at any request.
  std::optional<repeating_period> iteration(const loop_shape& shape) {
    std::optional<repeating_period> found;
    const auto take = [&] {
      if (auto p = d_.take_period()) found = std::move(p);
    };
    std::vector<std::uint64_t> live;
    for (std::size_t bytes : shape.sizes) {
      live.push_back(alloc(bytes));
      take();
      const std::uint64_t temp = alloc(bytes / 2 + 512);
      take();
      free(temp);
      take();
    }
    while (!live.empty()) {
      free(live.back());
      live.pop_back();
      take();
    }
    return found;
  }
  std::uint64_t calls = 0;

 private:
  repeat_detector& d_;
  std::uint64_t seq_ = 0;
};

TEST(RepeatDetector, FindsTheIterationOfALoopAndStartsItWhereNothingIsLive) {
  repeat_detector detector;
  feeder feed(detector);
  const loop_shape shape = random_loop(1, 200);
  feed.calls = 10;
  EXPECT_FALSE(feed.iteration(shape).has_value());  // seen once: nothing to compare with
  std::optional<repeating_period> found = feed.iteration(shape);
  ASSERT_TRUE(found.has_value()) << "a period seen twice is found by the end of its second pass";
  const std::size_t per_iteration = shape.sizes.size() * 4;
  EXPECT_EQ(found->requests.size(), per_iteration);
  EXPECT_EQ(found->requests.front().kind, request_kind::alloc) << "starts after the last free of an iteration";
  EXPECT_EQ(found->requests.front().bytes, shape.sizes.front());
  // Every block of the period is freed inside it: all have lifetimes.
  std::size_t planned = 0;
  for (std::size_t t = 0; t < found->requests.size(); ++t) {
    if (found->requests[t].kind == request_kind::alloc) {
      EXPECT_GT(found->lifetimes[t], 0u) << "at " << t;
      ++planned;
    }
  }
  EXPECT_EQ(planned, shape.sizes.size() * 2);
  EXPECT_EQ(found->first_sequence, 2 * per_iteration + 1);
}

TEST(RepeatDetector, OffersTheFirstTurnOfALoopThatFreesAllItAllocatesAsSoonAsItsSecondBegins) {
  repeat_detector detector;
  feeder feed(detector);
  const loop_shape shape = random_loop(1, 200);
  feed.calls = 490;  // the pools' calls before the first turn's last request was served
  ASSERT_FALSE(feed.iteration(shape).has_value());
  feed.calls = 500;  // and after: where the second turn begins
  const std::size_t per_iteration = shape.sizes.size() * 4;
  // The second turn, request by request, until the detector offers the first.
  std::optional<repeating_period> offered;
  for (std::size_t i = 0; i < 40 && !offered; ++i) {
    (void)feed.alloc(shape.sizes[i]);
    feed.calls = 520;  // the pools called the device for the second turn's requests
    if (auto p = detector.take_unconfirmed_period()) offered = std::move(p);
    if (offered) break;
    const std::uint64_t temp = feed.alloc(shape.sizes[i] / 2 + 512);
    if (auto p = detector.take_unconfirmed_period()) offered = std::move(p);
    if (offered) break;
    feed.free(temp);
    if (auto p = detector.take_unconfirmed_period()) offered = std::move(p);
  }
  ASSERT_TRUE(offered.has_value()) << "the log's first window, seen again, offers its first turn";
  EXPECT_TRUE(offered->unconfirmed);
  EXPECT_EQ(offered->requests.size(), per_iteration);
  EXPECT_EQ(offered->first_sequence, per_iteration + 1) << "cut where the first turn ended";
  EXPECT_EQ(offered->device_calls_at_turn_start, 500u) << "the calls before the second turn's first request";
  EXPECT_EQ(offered->requests.front().bytes, shape.sizes.front());
  for (std::size_t t = 0; t < offered->requests.size(); ++t) {
    if (offered->requests[t].kind == request_kind::alloc) EXPECT_GT(offered->lifetimes[t], 0u) << "at " << t;
  }
  EXPECT_FALSE(detector.take_unconfirmed_period().has_value()) << "offered once per proposal";
}

TEST(RepeatDetector, OffersNoUnconfirmedPeriodThatIsNotTheLogsFirstTurn) {
  // A warm-up request opens the log: the loop's period, found by sampled windows, is not the
  // log's first turn, which would start with the warm-up. It is confirmed before it is taken.
  repeat_detector detector;
  feeder feed(detector);
  const loop_shape shape = random_loop(1, 200);
  feed.free(feed.alloc(4096));
  std::optional<repeating_period> found;
  std::optional<repeating_period> offered;
  for (int pass = 0; pass < 3 && !found; ++pass) {
    std::vector<std::uint64_t> live;
    const auto look = [&] {
      if (auto p = detector.take_unconfirmed_period()) offered = std::move(p);
      if (auto p = detector.take_period()) found = std::move(p);
    };
    for (std::size_t bytes : shape.sizes) {
      live.push_back(feed.alloc(bytes));
      look();
      feed.free(feed.alloc(bytes / 2 + 512));
      look();
    }
    while (!live.empty()) {
      feed.free(live.back());
      live.pop_back();
      look();
    }
  }
  ASSERT_TRUE(found.has_value()) << "the loop is found (else this test sees nothing)";
  EXPECT_FALSE(offered.has_value());
}

TEST(RepeatDetector, OffersTheLogsFirstTurnAgainAtTheFirstRequestAfterItsBlocksAreAllFree) {
  repeat_detector detector;
  feeder feed(detector);
  const loop_shape shape = random_loop(1, 200);
  feed.calls = 490;  // the pools' calls while the first turn was served
  ASSERT_FALSE(feed.iteration(shape).has_value());
  feed.calls = 500;  // and after the second turn's first request
  const std::size_t per_iteration = shape.sizes.size() * 4;
  const request first{request_kind::alloc, shape.sizes[0], stream_id{1}, 0};
  EXPECT_EQ(detector.turn_again_at(request{request_kind::alloc, shape.sizes[0] + 512, stream_id{1}, 0}), 0u)
      << "not the log's first request";
  EXPECT_EQ(detector.turn_again_at(request{request_kind::alloc, shape.sizes[0], stream_id{2}, 0}), 0u)
      << "the same size on another stream";
  ASSERT_EQ(detector.turn_again_at(first), per_iteration + 1) << "the second turn begins with the next request";
  // Two requests into the second turn, it is still the first turn again.
  (void)feed.alloc(shape.sizes[0]);
  const request second{request_kind::alloc, shape.sizes[0] / 2 + 512, stream_id{1}, 0};
  feed.calls = 520;
  ASSERT_EQ(detector.turn_again_at(second), per_iteration + 1);
  const repeating_period turn = detector.take_turn_again(per_iteration + 1);
  EXPECT_TRUE(turn.unconfirmed);
  EXPECT_EQ(turn.requests.size(), per_iteration);
  EXPECT_EQ(turn.first_sequence, per_iteration + 1);
  EXPECT_EQ(turn.device_calls_at_turn_start, 500u);
  EXPECT_EQ(turn.requests.front(), first);
  for (std::size_t t = 0; t < turn.requests.size(); ++t) {
    if (turn.requests[t].kind == request_kind::alloc) EXPECT_GT(turn.lifetimes[t], 0u) << "at " << t;
  }
  EXPECT_EQ(detector.proposed_length(), 0u) << "taking it starts no confirmation";
  EXPECT_EQ(detector.turn_again_at(request{request_kind::alloc, 4096, stream_id{1}, 0}), 0u)
      << "a request off the turn";
}

TEST(RepeatDetector, OffersOneTurnAgainPerLogAndNoneTooShortOrForbidden) {
  repeat_detector detector;
  feeder feed(detector);
  const loop_shape shape = random_loop(1, 200);
  const request first{request_kind::alloc, shape.sizes[0], stream_id{1}, 0};
  // A workload whose turns only begin alike: each turn after the first begins with the log's
  // first request and goes on otherwise, so no window of it is seen again (nothing is proposed).
  const auto aside = [&](unsigned seed) {
    loop_shape other = random_loop(seed, 200);
    other.sizes[0] = shape.sizes[0];
    return other;
  };
  (void)feed.iteration(shape);
  const std::uint64_t from = detector.turn_again_at(first);
  ASSERT_NE(from, 0u);
  (void)detector.take_turn_again(from);
  (void)feed.iteration(aside(11));
  ASSERT_EQ(detector.proposed_length(), 0u) << "nothing proposed (else this test sees nothing)";
  EXPECT_EQ(detector.turn_again_at(first), 0u) << "one turn of this log was taken";
  detector.restart();
  (void)feed.iteration(shape);
  EXPECT_NE(detector.turn_again_at(first), 0u) << "a new log may offer its own";
  detector.forbid(shape.sizes.size() * 4);
  EXPECT_EQ(detector.turn_again_at(first), 0u) << "a length whose plan derailed at once";

  // A loop too short to be proposed (60 requests, under two windows) is not offered, nor, once
  // it has come round often enough, a multiple of it.
  repeat_detector short_log;
  feeder short_feed(short_log);
  const loop_shape short_shape = random_loop(2, 15);
  const request short_first{request_kind::alloc, short_shape.sizes[0], stream_id{1}, 0};
  for (int turn = 0; turn < 6; ++turn) {
    (void)short_feed.iteration(short_shape);
    EXPECT_EQ(short_log.turn_again_at(short_first), 0u) << "after turn " << turn;
  }
}

TEST(RepeatDetector, ATurnThatEndsAsItBeginsIsFollowedFromItsLastRequestsAndOfferedOnce) {
  // Each turn begins and ends with the same 4 KiB block allocated and freed, everything else
  // freed between: the last one looks like the turn beginning again, two requests early. That
  // candidate is what is offered; the real start after it is not (one turn per log).
  repeat_detector detector;
  feeder feed(detector);
  const loop_shape shape = random_loop(3, 100);
  const std::uint64_t length = shape.sizes.size() * 4 + 4;
  const request first{request_kind::alloc, 4096, stream_id{1}, 0};
  feed.free(feed.alloc(4096));
  (void)feed.iteration(shape);
  const std::uint64_t early = detector.turn_again_at(first);
  EXPECT_EQ(early, length - 1) << "the turn's last block looks like the next turn's first";
  ASSERT_NE(early, 0u);
  (void)detector.take_turn_again(early);
  feed.free(feed.alloc(4096));
  EXPECT_EQ(detector.turn_again_at(first), 0u) << "its real start: another turn of this log";
}

TEST(RepeatDetector, ATurnAgainThatRunsOutOfHostMemoryLeavesNoPeriodBeingConfirmed) {
  repeat_detector detector;
  feeder feed(detector);
  const loop_shape shape = random_loop(1, 200);
  const std::size_t per_iteration = shape.sizes.size() * 4;
  (void)feed.iteration(shape);
  const std::uint64_t from = detector.turn_again_at(request{request_kind::alloc, shape.sizes[0], stream_id{1}, 0});
  ASSERT_NE(from, 0u);
  streamsafe::testing::fail_host_allocation(per_iteration * sizeof(request), 1);
  EXPECT_THROW((void)detector.take_turn_again(from), std::bad_alloc);
  streamsafe::testing::disarm_host_allocation_failure();
  EXPECT_EQ(detector.proposed_length(), 0u) << "no confirmation was started";
  std::optional<repeating_period> found;
  for (int i = 0; i < 2 && !found; ++i) found = feed.iteration(shape);
  EXPECT_TRUE(found.has_value()) << "the loop is still found";
}

TEST(RepeatDetector, NamesWhereEachBlockOfThePeriodLayWhenItsLifetimeWasSeen) {
  // Each block lies somewhere new every pass. A block carried into the next pass (freed there)
  // is not freed yet when the period is cut: its place is the one of the pass before, whose
  // free was seen; every other block's is its own.
  repeat_detector detector;
  std::uint64_t sequence = 0;
  const auto address_of = [](std::uint64_t s) { return std::uintptr_t{0x100000} + 512 * s; };
  std::uint64_t carried = 0;
  std::optional<repeating_period> found;
  const loop_shape shape = random_loop(6, 60);
  for (int pass = 0; pass < 4 && !found; ++pass) {
    const auto free = [&](std::uint64_t by) {
      detector.note_free(++sequence, by, 0, address_of(by));
      if (auto p = detector.take_period()) found = std::move(p);
    };
    const std::uint64_t large = ++sequence;
    detector.note_alloc(large, 64 * 512 * 1024, stream_id{1}, 0);
    for (const std::size_t bytes : shape.sizes) {
      detector.note_alloc(++sequence, bytes, stream_id{1}, 0);
      free(sequence);
    }
    if (carried != 0) free(carried);
    carried = ++sequence;
    detector.note_alloc(carried, 4096, stream_id{1}, 0);
    free(large);
  }
  ASSERT_TRUE(found.has_value());
  ASSERT_EQ(found->addresses.size(), found->requests.size());
  const std::uint64_t period = found->requests.size();
  bool saw_carried = false;
  for (std::size_t t = 0; t < period; ++t) {
    if (found->requests[t].kind != request_kind::alloc) {
      EXPECT_EQ(found->addresses[t], 0u) << "request " << t;
      continue;
    }
    const std::uint64_t s = found->first_sequence - period + t;  // in the instance just cut
    const bool outlives = t + found->lifetimes[t] >= period;
    saw_carried = saw_carried || outlives;
    EXPECT_EQ(found->addresses[t], address_of(outlives ? s - period : s)) << "request " << t;
  }
  EXPECT_TRUE(saw_carried) << "no block outlives the period: this test sees half of what it is for";
}

TEST(RepeatDetector, CountsTheDeviceCallsOfTheLastPeriodOnly) {
  repeat_detector detector;
  feeder feed(detector);
  const loop_shape shape = random_loop(2, 100);
  feed.calls = 500;  // the first iteration grows
  (void)feed.iteration(shape);
  std::optional<repeating_period> found = feed.iteration(shape);  // no growth in the second
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->device_calls, 0u);
}

TEST(RepeatDetector, AChangedIterationIsNoPeriod) {
  repeat_detector detector;
  feeder feed(detector);
  loop_shape a = random_loop(3, 100);
  loop_shape b = a;
  b.sizes[70] += 512;  // the second pass differs late, after its window matched
  (void)feed.iteration(a);
  EXPECT_FALSE(feed.iteration(b).has_value());
  const std::optional<repeating_period> third = feed.iteration(a);
  EXPECT_FALSE(third.has_value()) << "a against b: the change is seen again; found "
                                  << (third ? third->requests.size() : 0) << " first " << (third ? third->first_sequence : 0);
}

TEST(RepeatDetector, LayersRepeatingInsideAPassAreNotTheirPeriod) {
  repeat_detector detector;
  feeder feed(detector);
  loop_shape same_layers;
  same_layers.sizes.assign(300, 4096);  // every layer alike: windows recur inside the pass
  (void)feed.iteration(same_layers);
  std::optional<repeating_period> found = feed.iteration(same_layers);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->requests.size(), same_layers.sizes.size() * 4) << "the whole pass, not one layer";
}

TEST(RepeatDetector, AForbiddenLengthIsNotProposedAgainAfterARestart) {
  repeat_detector detector;
  feeder feed(detector);
  const loop_shape shape = random_loop(5, 100);
  (void)feed.iteration(shape);
  const std::optional<repeating_period> found = feed.iteration(shape);
  ASSERT_TRUE(found.has_value());
  detector.forbid(found->requests.size());  // its plan derailed at once
  detector.restart();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(feed.iteration(shape).has_value()) << "pass " << i;
}

TEST(RepeatDetector, AGapInTheNumberingStartsOver) {
  repeat_detector detector;
  const loop_shape shape = random_loop(4, 100);
  feeder feed(detector);
  (void)feed.iteration(shape);
  detector.restart();
  EXPECT_FALSE(feed.iteration(shape).has_value());
  EXPECT_TRUE(feed.iteration(shape).has_value());
}

TEST(OffsetPlanner, BlocksLiveTogetherNeverShareBytesAndThePlanIsNearThePeak) {
  std::mt19937 rng(7);
  const std::uint64_t period = 5000;
  std::vector<cyclic_lifetime> blocks;
  for (int i = 0; i < 1500; ++i) {
    blocks.push_back({512 * (1 + rng() % 2048), rng() % period, 1 + rng() % (period / 4)});
  }
  const offset_plan plan = plan_offsets(blocks, period);
  ASSERT_EQ(plan.offsets.size(), blocks.size());
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 512, 0u);
    EXPECT_LE(plan.offsets[i] + blocks[i].bytes, plan.footprint);
    for (std::size_t j = i + 1; j < blocks.size(); ++j) {
      if (!overlap_in_time(blocks[i], blocks[j], period)) continue;
      const bool apart = plan.offsets[i] + blocks[i].bytes <= plan.offsets[j] ||
                         plan.offsets[j] + blocks[j].bytes <= plan.offsets[i];
      ASSERT_TRUE(apart) << "blocks " << i << " and " << j << " live together and overlap";
    }
  }
  const std::size_t peak = peak_live_bytes(blocks, period);
  EXPECT_GE(plan.footprint, peak);
  EXPECT_LE(static_cast<double>(plan.footprint), 1.10 * static_cast<double>(peak));
}

TEST(OffsetPlanner, SparseLifetimesThatWrapOrBeginTogetherNeverShareBytes) {
  // Few blocks alive together, as in variable-length inference: the planner's sparse path, which
  // lists each block's conflicts by one sweep. Some lifetimes run past the period's end, some
  // last the whole period, and some begin at the same request.
  std::mt19937 rng(11);
  const std::uint64_t period = 20000;
  std::vector<cyclic_lifetime> blocks;
  for (int i = 0; i < 3000; ++i) {
    const std::uint64_t start = i % 7 == 0 ? 100 * (rng() % 50) : rng() % period;
    const std::uint64_t length = i % 300 == 0 ? 1 + rng() % period : 1 + rng() % 100;
    blocks.push_back({512 * (1 + rng() % 256), start, length});
  }
  blocks.push_back({4096, period - 1, period});  // alive all the time, from the last request
  const offset_plan plan = plan_offsets(blocks, period);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    for (std::size_t j = i + 1; j < blocks.size(); ++j) {
      if (!overlap_in_time(blocks[i], blocks[j], period)) continue;
      ASSERT_TRUE(plan.offsets[i] + blocks[i].bytes <= plan.offsets[j] || plan.offsets[j] + blocks[j].bytes <= plan.offsets[i])
          << "blocks " << i << " and " << j << " live together and overlap";
    }
  }
  EXPECT_TRUE(disjoint_in_use(blocks, plan.offsets, period));
  EXPECT_LE(static_cast<double>(plan.footprint), 1.10 * static_cast<double>(peak_live_bytes(blocks, period)));
}

TEST(OffsetPlanner, DenseLifetimesNeverShareBytesEither) {
  // Most blocks alive together, as a training step's activations: the planner's dense path.
  std::mt19937 rng(9);
  const std::uint64_t period = 2000;
  std::vector<cyclic_lifetime> blocks;
  for (int i = 0; i < 400; ++i) blocks.push_back({512 * (1 + rng() % 512), rng() % 200, 800 + rng() % 1000});
  const std::vector<std::size_t> ends{64 * 512 * 40, 64 * 512 * 90};
  for (const std::span<const std::size_t> boundaries : {std::span<const std::size_t>{}, std::span<const std::size_t>(ends)}) {
    const offset_plan plan = plan_offsets(blocks, period, boundaries);
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      for (const std::size_t end : boundaries) {
        ASSERT_FALSE(plan.offsets[i] < end && end < plan.offsets[i] + blocks[i].bytes) << "block " << i;
      }
      for (std::size_t j = i + 1; j < blocks.size(); ++j) {
        if (!overlap_in_time(blocks[i], blocks[j], period)) continue;
        ASSERT_TRUE(plan.offsets[i] + blocks[i].bytes <= plan.offsets[j] || plan.offsets[j] + blocks[j].bytes <= plan.offsets[i])
            << "blocks " << i << " and " << j;
      }
    }
    EXPECT_GE(plan.footprint, peak_live_bytes(blocks, period));
  }
}

TEST(OffsetPlanner, APlacementIsDisjointOnlyWhenNoTwoBlocksAliveTogetherShareBytes) {
  const std::uint64_t period = 100;
  const std::vector<cyclic_lifetime> blocks{{1024, 10, 20}, {1024, 40, 20}, {1024, 90, 20}};
  // The first two never live together: they may share bytes. The third runs from 90 into the
  // next period until 10, where the first begins: apart in time too.
  EXPECT_TRUE(disjoint_in_use(blocks, std::vector<std::size_t>{0, 0, 0}, period));
  const std::vector<cyclic_lifetime> wrapping{{1024, 10, 20}, {1024, 90, 30}};  // alive together from 10 to 20
  EXPECT_FALSE(disjoint_in_use(wrapping, std::vector<std::size_t>{0, 512}, period)) << "half a block shared";
  EXPECT_FALSE(disjoint_in_use(wrapping, std::vector<std::size_t>{512, 0}, period)) << "either way round";
  EXPECT_TRUE(disjoint_in_use(wrapping, std::vector<std::size_t>{0, 1024}, period));
  std::mt19937 rng(5);
  std::vector<cyclic_lifetime> random;
  for (int i = 0; i < 600; ++i) random.push_back({512 * (1 + rng() % 64), rng() % 3000, 1 + rng() % 900});
  const offset_plan plan = plan_offsets(random, 3000);
  EXPECT_TRUE(disjoint_in_use(random, plan.offsets, 3000)) << "the planner's own placement";
}

TEST(OffsetPlanner, LifetimesWrapAroundThePeriodsEnd) {
  const std::uint64_t period = 100;
  // Alive from 90 to 110, that is 90..100 and 0..10: it overlaps a block at 5, not one at 50.
  const cyclic_lifetime wraps{1024, 90, 20};
  EXPECT_TRUE(overlap_in_time(wraps, {512, 5, 2}, period));
  EXPECT_FALSE(overlap_in_time(wraps, {512, 50, 10}, period));
  EXPECT_TRUE(overlap_in_time({512, 5, 2}, wraps, period));
  const std::vector<cyclic_lifetime> blocks{wraps, {1024, 5, 2}, {1024, 50, 10}};
  const offset_plan plan = plan_offsets(blocks, period);
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
  EXPECT_EQ(plan.footprint, 2048u);
  EXPECT_EQ(peak_live_bytes(blocks, period), 2048u);
}

TEST(OffsetPlanner, NoBlockStraddlesABoundaryBetweenRanges) {
  // Ranges of 3, 5 and 4 KiB end at 3, 8 and 12 KiB: memory lent from separate places.
  const std::vector<std::size_t> ends{3072, 8192, 12288};
  std::mt19937 rng(3);
  const std::uint64_t period = 400;
  std::vector<cyclic_lifetime> blocks;
  for (int i = 0; i < 60; ++i) blocks.push_back({512 * (1 + rng() % 6), rng() % period, 1 + rng() % 40});
  const offset_plan plan = plan_offsets(blocks, period, ends);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    for (const std::size_t end : ends) {
      EXPECT_FALSE(plan.offsets[i] < end && end < plan.offsets[i] + blocks[i].bytes)
          << "block " << i << " at " << plan.offsets[i] << " of " << blocks[i].bytes << " straddles " << end;
    }
  }
  // Without the boundaries a 2.5 KiB block and a 1 KiB block live together pack into 3.5 KiB;
  // with a boundary at 3 KiB the second goes past it.
  const std::vector<cyclic_lifetime> pair{{2560, 0, 10}, {1024, 0, 10}};
  EXPECT_EQ(plan_offsets(pair, 20).offsets[1], 2560u);
  EXPECT_EQ(plan_offsets(pair, 20, ends).offsets[1], 3072u);
}

TEST(OffsetPlanner, OnePlannerGivesEachPlanOfItsPeriodAsPlanningAfreshWould) {
  std::mt19937 rng(9);
  const std::uint64_t period = 2000;
  for (const std::uint64_t longest : {std::uint64_t{40}, std::uint64_t{1500}}) {  // sparse, then dense
    std::vector<cyclic_lifetime> blocks;
    for (int i = 0; i < 500; ++i) blocks.push_back({512 * (1 + rng() % 64), rng() % period, 1 + rng() % longest});
    const offset_planner planner(blocks, period);
    const std::vector<std::size_t> ends{96 * 1024, 160 * 1024, 4096 * 1024};
    for (const std::span<const std::size_t> boundaries : {std::span<const std::size_t>{}, std::span<const std::size_t>(ends)}) {
      const offset_plan fresh = plan_offsets(blocks, period, boundaries);
      const offset_plan shared = planner.plan(boundaries);
      EXPECT_EQ(shared.offsets, fresh.offsets) << "lifetimes up to " << longest;
      EXPECT_EQ(shared.footprint, fresh.footprint);
    }
  }
}

/// A plan's footprint and a checksum of its offsets (FNV-1a over them, in order).
std::pair<std::size_t, std::uint64_t> fingerprint(const offset_plan& plan) {
  std::uint64_t checksum = 1469598103934665603ULL;
  for (const std::size_t offset : plan.offsets) checksum = (checksum ^ offset) * 1099511628211ULL;
  return {plan.footprint, checksum};
}

TEST(OffsetPlanner, PlacesAsItAlwaysHas) {
  // The offsets of two fixed periods, sparse and dense, as the planner placed them before its
  // sweep was shared between plans (a checksum of the offsets and the footprint): a change here
  // is a change of placement, to be made on purpose.
  std::mt19937 rng(9);
  const std::uint64_t period = 2000;
  std::vector<std::pair<std::size_t, std::uint64_t>> seen;
  for (const std::uint64_t longest : {std::uint64_t{40}, std::uint64_t{1500}}) {
    std::vector<cyclic_lifetime> blocks;
    for (int i = 0; i < 500; ++i) blocks.push_back({512 * (1 + rng() % 64), rng() % period, 1 + rng() % longest});
    const std::vector<std::size_t> ends{96 * 1024, 160 * 1024, 4096 * 1024};
    const offset_plan plan = plan_offsets(blocks, period, ends);
    seen.push_back(fingerprint(plan));
  }
  // Computed with the planner of 07b0847, before the sweep was shared.
  const std::vector<std::pair<std::size_t, std::uint64_t>> before{{263680, 11701436767251428979ULL},
                                                                  {4207616, 16204710472682756723ULL}};
  EXPECT_EQ(seen, before);
}

TEST(OffsetPlanner, PlacesAPeriodWhoseOrderIsSortedOnAThreadAsItAlwaysHas) {
  // Periods of more blocks than sort_on_a_thread_from, whose placing order is sorted beside the
  // sweep: the same offsets as when it was sorted first (a checksum, as above), and disjoint.
  std::mt19937 rng(5);
  const std::size_t count = 2 * offset_planner::sort_on_a_thread_from;
  const std::uint64_t period = 3 * count;
  std::vector<std::pair<std::size_t, std::uint64_t>> seen;
  for (const std::uint64_t longest : {std::uint64_t{60}, std::uint64_t{2000}}) {
    std::vector<cyclic_lifetime> blocks;
    for (std::size_t i = 0; i < count; ++i) {
      blocks.push_back({512 * (1 + rng() % 32), rng() % period, 1 + rng() % longest});  // many ties in size
    }
    const offset_plan plan = plan_offsets(blocks, period);
    EXPECT_TRUE(disjoint_in_use(blocks, plan.offsets, period)) << "longest lifetime " << longest;
    seen.push_back(fingerprint(plan));
  }
  // Computed with the planner of b891bbf, which sorted the order before sweeping.
  const std::vector<std::pair<std::size_t, std::uint64_t>> before{{211968, 17642044395238410627ULL},
                                                                  {3466240, 3641467961999729027ULL}};
  EXPECT_EQ(seen, before);
}

TEST(OffsetPlanner, GivingUpAboveAFootprintAnswersWhetherThePlanFitsAsTheWholePlanWould) {
  std::mt19937 rng(4);
  const std::uint64_t period = 1000;
  std::vector<cyclic_lifetime> blocks;
  for (int i = 0; i < 300; ++i) blocks.push_back({512 * (1 + rng() % 64), rng() % period, 1 + rng() % 60});
  const offset_planner planner(blocks, period);
  const std::size_t footprint = planner.plan().footprint;
  for (const std::size_t room : {footprint / 2, footprint - 512, footprint, footprint + 4096}) {
    const offset_plan partial = planner.plan({}, room);
    EXPECT_EQ(partial.footprint > room, footprint > room) << "room " << room << ", footprint " << footprint;
    if (footprint <= room) {
      EXPECT_EQ(partial.footprint, footprint) << "a plan that fits is placed whole";
      EXPECT_EQ(partial.offsets.size(), blocks.size()) << "with an offset for every block";
    } else {
      EXPECT_TRUE(partial.offsets.empty()) << "a plan given up has no offsets, room " << room;
    }
  }
}

TEST(OccupancyTree, NamesEveryHolderOfARangeAsACellByCellRecordWould) {
  std::mt19937 rng(3);
  constexpr std::uint32_t cells = 300;
  constexpr std::uint32_t history = 1000;
  occupancy_tree tree;
  tree.reset(cells, history);
  std::vector<std::uint32_t> truth(cells, history);
  for (std::uint32_t holder = 0; holder < 5000; ++holder) {
    const std::uint32_t begin = rng() % cells;
    const std::uint32_t end = begin + 1 + rng() % std::min<std::uint32_t>(40, cells - begin);
    std::vector<std::uint32_t> seen;
    tree.for_each_holder(begin, end, [&seen](std::uint32_t h) { seen.push_back(h); });
    std::vector<std::uint32_t> expected(truth.begin() + begin, truth.begin() + end);
    for (auto* v : {&seen, &expected}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    ASSERT_EQ(seen, expected) << "cells [" << begin << ", " << end << ") before holder " << holder;
    if (holder % 2 == 0) {
      tree.take(begin, end, holder);
    } else {  // taking lists the same holders as it goes
      std::vector<std::uint32_t> taken_from;
      tree.take(begin, end, holder, [&taken_from](std::uint32_t h) { taken_from.push_back(h); });
      std::sort(taken_from.begin(), taken_from.end());
      taken_from.erase(std::unique(taken_from.begin(), taken_from.end()), taken_from.end());
      ASSERT_EQ(taken_from, expected) << "taking cells [" << begin << ", " << end << ") for holder " << holder;
    }
    std::fill(truth.begin() + begin, truth.begin() + end, holder);
  }
  tree.reset(cells, occupancy_tree::nobody);
  bool any = false;
  tree.for_each_holder(0, cells, [&any](std::uint32_t) { any = true; });
  EXPECT_FALSE(any) << "nobody is no holder";
}

TEST(OccupancyTree, TakingTellsWhichCellsEachHolderHadNobodyIncluded) {
  std::mt19937 rng(5);
  constexpr std::uint32_t cells = 300;
  occupancy_tree tree;
  tree.reset(cells, occupancy_tree::nobody);
  std::vector<std::uint32_t> truth(cells, occupancy_tree::nobody);
  for (std::uint32_t holder = 0; holder < 3000; ++holder) {
    const std::uint32_t begin = rng() % cells;
    const std::uint32_t end = begin + 1 + rng() % std::min<std::uint32_t>(40, cells - begin);
    std::vector<std::uint32_t> told(cells, holder);  // holder: not told
    tree.take_stretches(begin, end, holder, [&](std::uint32_t previous, std::uint32_t first, std::uint32_t last) {
      ASSERT_LT(first, last);
      ASSERT_GE(first, begin);
      ASSERT_LE(last, end);
      for (std::uint32_t c = first; c < last; ++c) {
        ASSERT_EQ(told[c], holder) << "cell " << c << " told twice";
        told[c] = previous;
      }
    });
    for (std::uint32_t c = begin; c < end; ++c) {
      ASSERT_EQ(told[c], truth[c]) << "cell " << c << " taking [" << begin << ", " << end << ") for " << holder;
    }
    std::fill(truth.begin() + begin, truth.begin() + end, holder);
  }
}

}  // namespace
}  // namespace streamsafe::detail
