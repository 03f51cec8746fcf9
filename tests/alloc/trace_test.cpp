// The allocation trace parser and the replay.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe {
namespace {

std::size_t line_of_error(const std::string& text) {
  try {
    (void)parse_alloc_trace(text);
  } catch (const parse_error& e) {
    EXPECT_NE(std::string(e.what()).find("line " + std::to_string(e.line())), std::string::npos) << e.what();
    return e.line();
  }
  ADD_FAILURE() << "accepted: " << text;
  return 0;
}

TEST(TraceParser, ReadsEveryAction) {
  const auto events = parse_alloc_trace(
      "action,addr,size,stream\r\nsegment_alloc,4096,2097152,0\nalloc,0x1000,512,7\nfree_requested,4096,512,7\n\n"
      "free_completed,4096,512,7\nsegment_free,4096,2097152,0\n");
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[1].action, trace_action::alloc);
  EXPECT_EQ(events[1].addr, 4096u);
  EXPECT_EQ(events[1].stream, 7);
  EXPECT_EQ(events[1].line, 3u);
  EXPECT_EQ(events[4].line, 7u);
}

TEST(TraceParser, RejectsMalformedLinesWithTheirNumber) {
  const std::string header = "action,addr,size,stream\n";
  EXPECT_EQ(line_of_error("act,addr\nalloc,1,2,3\n"), 1u);
  EXPECT_EQ(line_of_error(header + "alloc,1,2,3\nalloc,1,2\n"), 3u);
  EXPECT_EQ(line_of_error(header + "alloc,1,2,3,4\n"), 2u);
  EXPECT_EQ(line_of_error(header + "allocate,1,2,3\n"), 2u);
  EXPECT_EQ(line_of_error(header + "alloc,x1,2,3\n"), 2u);
  EXPECT_EQ(line_of_error(header + "alloc,1,-2,3\n"), 2u);
  EXPECT_EQ(line_of_error(header + "alloc,1,2,\n"), 2u);
  EXPECT_EQ(line_of_error(header + "alloc,1,99999999999999999999999,3\n"), 2u);
  EXPECT_THROW((void)parse_alloc_trace(""), parse_error);
}

TEST(TraceReplay, MeasuresPeaksAndPyTorchsOwnFigure) {
  const auto events = parse_alloc_trace(
      "action,addr,size,stream\nsegment_alloc,0,4194304,0\nalloc,0,1000000,0\nalloc,1000448,2000000,1\n"
      "free_requested,0,1000000,0\nalloc,0,500000,0\nfree_requested,1000448,2000000,1\nfree_requested,0,500000,0\n"
      "free_requested,12345,1,0\n");
  const Device device = Device::sim();
  const replay_result r = replay_alloc_trace(events, device, allocator_options{});
  EXPECT_EQ(r.peak_live_bytes, 3000000u);
  EXPECT_EQ(r.original_peak_reserved_bytes, 4194304u);
  EXPECT_GE(r.peak_reserved_bytes, r.peak_live_bytes);
  EXPECT_EQ(r.operations, 6u);
  EXPECT_EQ(r.unmatched_frees, 1u);
  EXPECT_EQ(r.streams, 2u);
}

TEST(TraceReplay, ReportsProgressEvery65536EventsAndAtTheEnd) {
  std::string text = "action,addr,size,stream\n";
  constexpr std::size_t pairs = 70'000;  // 140,000 events: two calls on the way, one at the end
  for (std::size_t i = 0; i < pairs; ++i) {
    text += "alloc," + std::to_string(i) + ",4096,0\nfree_requested," + std::to_string(i) + ",4096,0\n";
  }
  const auto events = parse_alloc_trace(text);
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  (void)replay_alloc_trace(events, Device::sim(), allocator_options{},
                           replay_loop{.progress = [&](std::size_t done, std::size_t total) {
                             calls.emplace_back(done, total);
                           }});
  const std::vector<std::pair<std::size_t, std::size_t>> expected = {
      {65'536, 140'000}, {131'072, 140'000}, {140'000, 140'000}};
  EXPECT_EQ(calls, expected);
}

TEST(TraceReplay, AllocOfALiveAddressNamesTheLine) {
  const auto events = parse_alloc_trace("action,addr,size,stream\nalloc,0,512,0\nalloc,0,512,0\n");
  try {
    (void)replay_alloc_trace(events, Device::sim(), allocator_options{});
    FAIL() << "accepted a double alloc";
  } catch (const parse_error& e) {
    EXPECT_EQ(e.line(), 3u);
  }
}

// A training step: weights (kept: never freed) made in the first pass, activations made and
// freed in every pass, one of them also used by a second stream.
const std::string training_step =
    "action,addr,size,stream\n"
    "alloc,100,3000000,0\n"             // weights: kept
    "alloc,1,4000000,0\n"
    "alloc,2,1000,0\n"
    "record_stream,2,0,1\n"
    "free_requested,2,1000,0\n"
    "alloc,3,6000000,1\n"
    "free_requested,1,4000000,0\n"
    "free_requested,3,6000000,1\n"
    "free_requested,77,512,0\n";      // allocated before the recording: skipped

TEST(TraceLoop, LaterPassesRepeatWhatTheTraceFreesAndKeepTheRest) {
  const auto events = parse_alloc_trace(training_step);
  const replay_result r = replay_alloc_trace(events, Device::sim(), allocator_options{}, replay_loop{.iterations = 3});
  ASSERT_EQ(r.iterations.size(), 3u);
  EXPECT_EQ(r.iterations[0].operations, 7u);  // 4 allocations, 3 frees
  EXPECT_EQ(r.iterations[1].operations, 6u);  // the weights stay from the first pass
  EXPECT_EQ(r.iterations[2].operations, 6u);
  EXPECT_EQ(r.operations, 19u);
  for (const replay_iteration& pass : r.iterations) EXPECT_EQ(pass.peak_live_bytes, 3000000u + 4000000 + 6000000);
  EXPECT_EQ(r.unmatched_frees, 1u);  // counted once, not per pass
  EXPECT_EQ(r.record_streams, 3u);
  EXPECT_EQ(r.streams, 2u);
  EXPECT_EQ(steady_state(r).iterations, 2u);
  EXPECT_EQ(first_iteration(r).iterations, 1u);
}

TEST(TraceLoop, EachPassMeasuresTheClocksShareOfItsTimedCalls) {
  const auto events = parse_alloc_trace(training_step);
  const replay_result r = replay_alloc_trace(events, Device::sim(), allocator_options{}, replay_loop{.iterations = 3});
  for (const replay_iteration& pass : r.iterations) EXPECT_GT(pass.timer_ns, 0u);
}

TEST(TraceLoop, APhaseGivesTheClocksSharePerOperationOfItsPasses) {
  replay_result r;
  r.iterations = {replay_iteration{.operations = 10, .allocator_ns = 900, .timer_ns = 250},
                  replay_iteration{.operations = 20, .allocator_ns = 2000, .timer_ns = 400},
                  replay_iteration{.operations = 30, .allocator_ns = 2700, .timer_ns = 600}};
  EXPECT_DOUBLE_EQ(first_iteration(r).timer_ns_per_op, 25.0);
  EXPECT_DOUBLE_EQ(steady_state(r).timer_ns_per_op, 20.0);  // 1,000 ns over 50 operations
  EXPECT_DOUBLE_EQ(steady_state(r).allocator_ns_per_op, 94.0);
  EXPECT_DOUBLE_EQ(last_iteration(r).timer_ns_per_op, 20.0);
}

TEST(TraceLoop, AKeptAllocationsAddressMayServeAnEarlierOneInTheNextPass) {
  // PyTorch reuses addresses: an activation's, then a weight's made late in the step.
  const auto events = parse_alloc_trace(
      "action,addr,size,stream\nalloc,5,1000,0\nfree_requested,5,1000,0\nalloc,5,2000,0\n");
  const replay_result r = replay_alloc_trace(events, Device::sim(), allocator_options{}, replay_loop{.iterations = 3});
  ASSERT_EQ(r.iterations.size(), 3u);
  EXPECT_EQ(r.iterations[1].operations, 2u);
  EXPECT_EQ(r.iterations[2].peak_live_bytes, 3000u);
}

TEST(TraceLoop, OnePassIsTheTraceAsRecordedAndHasNoSteadyState) {
  const auto events = parse_alloc_trace(training_step);
  const replay_result r = replay_alloc_trace(events, Device::sim(), allocator_options{});
  ASSERT_EQ(r.iterations.size(), 1u);
  EXPECT_EQ(r.operations, 7u);
  EXPECT_EQ(steady_state(r).iterations, 0u);
}

TEST(TraceLoop, CountsTheFirstPassDeviceCallsAndNoneOnceARepeatedLoopSettles) {
  const auto events = parse_alloc_trace(training_step);
  for (const segment_kind segments : {segment_kind::expandable, segment_kind::fixed}) {
    const replay_result r =
        replay_alloc_trace(events, Device::sim(), allocator_options{.segments = segments}, replay_loop{.iterations = 4});
    EXPECT_GT(first_iteration(r).device_calls_per_iteration, 0) << "segments " << static_cast<int>(segments);
    EXPECT_EQ(steady_state(r).device_calls_per_iteration, 0) << "segments " << static_cast<int>(segments);
    EXPECT_GE(first_iteration(r).peak_reserved_bytes, first_iteration(r).peak_live_bytes);
    EXPECT_GE(steady_state(r).peak_reserved_bytes, steady_state(r).peak_live_bytes);
  }
}

TEST(TraceLoop, TellsEachPassDeviceCallsByKind) {
  const auto events = parse_alloc_trace(training_step);
  const replay_result r = replay_alloc_trace(events, Device::sim(), allocator_options{}, replay_loop{.iterations = 3});
  for (const replay_iteration& pass : r.iterations) EXPECT_EQ(pass.device_calls_by_kind.total(), pass.device_calls);
  const device_call_counts& first = r.iterations[0].device_calls_by_kind;
  EXPECT_GT(first.create, 0u);  // expandable segments: each chunk created, mapped and made accessible
  EXPECT_EQ(first.map, first.create);
  EXPECT_GT(first.reserve, 0u);
}

TEST(AllocatorStats, ResetReservedPeakLeavesTheOtherPeaks) {
  const Device device = Device::sim();
  Stream stream(device);
  caching_allocator allocator(device, allocator_options{});
  allocator.deallocate(allocator.allocate(10u << 20, stream));
  allocator.empty_cache();
  allocator.reset_reserved_peak();
  void* p = allocator.allocate(1u << 20, stream);
  const allocator_stats s = allocator.stats();
  EXPECT_EQ(s.reserved_bytes.peak, s.reserved_bytes.current);  // a replay pass's own peak
  EXPECT_LT(s.reserved_bytes.peak, 10 << 20);
  EXPECT_GE(s.allocated_bytes.peak, 10 << 20);  // growth decisions read these: untouched
  allocator.deallocate(p);
}

TEST(TraceLoop, CountsTheHostSyncOfAPassThatMovesChunks) {
  // remap with no slack: B does not fit in A's hole, so A's free chunks move to it, after a
  // synchronization of the stream (work enqueued before may still use A).
  const auto events = parse_alloc_trace(
      "action,addr,size,stream\nalloc,1,4194304,0\nalloc,2,2097152,0\nfree_requested,1,4194304,0\n"
      "alloc,3,6291456,0\nfree_requested,3,6291456,0\n");
  const replay_result r = replay_alloc_trace(events, Device::sim(), allocator_options{.remap_slack_percent = 0});
  ASSERT_EQ(r.iterations.size(), 1u);
  EXPECT_EQ(r.iterations[0].host_syncs, 1u);
}

TEST(TraceLoop, BusyWorkTouchesEveryNewBlockAndEveryRecordedUseAndStepsEveryKOperations) {
  const auto events = parse_alloc_trace(training_step);
  std::size_t touches = 0;
  std::size_t steps = 0;
  const replay_loop loop{.iterations = 2,
                         .work = replay_work{.touch = [&](StreamRef, void*, std::size_t) { ++touches; },
                                             .step = [&](StreamRef) { ++steps; },
                                             .step_every = 2}};
  const replay_result r = replay_alloc_trace(events, Device::sim(), allocator_options{}, loop);
  EXPECT_EQ(touches, (4u + 1) + (3u + 1));  // allocations and record_streams of both passes
  EXPECT_EQ(steps, r.operations / 2);
}

/// A replay_target that hands out distinct addresses it never touches and records what the loop
/// asks of it; its "device calls" are its allocations, its reserved peak the live bytes' peak.
class recording_target final : public replay_target {
 public:
  void* allocate(std::size_t bytes, StreamRef stream) override {
    void* ptr = reinterpret_cast<void*>(next_ += 1 << 24);
    live_[ptr] = {bytes, stream.id()};
    live_bytes_ += bytes;
    peak_ = std::max(peak_, live_bytes_);
    ++allocations_;
    return ptr;
  }
  void deallocate(void* ptr) override {
    const auto it = live_.find(ptr);
    ASSERT_NE(it, live_.end()) << "freed twice, or never allocated";
    live_bytes_ -= it->second.first;
    live_.erase(it);
  }
  void record_stream(void* ptr, StreamRef stream) override {
    ASSERT_TRUE(live_.contains(ptr)) << "record_stream of a block not live";
    recorded.emplace_back(live_[ptr].first, stream.id());
  }
  void reset_reserved_peak() override {
    peak_ = live_bytes_;
    ++peak_resets;
  }
  replay_counters counters() const override {
    return replay_counters{.device_calls = allocations_, .device_allocations = allocations_, .peak_reserved_bytes = peak_};
  }
  [[nodiscard]] std::size_t live_blocks() const { return live_.size(); }

  std::vector<std::pair<std::size_t, stream_id>> recorded;  // (block size, recorded stream)
  std::size_t peak_resets = 0;

 private:
  std::uintptr_t next_ = 0;
  std::map<void*, std::pair<std::size_t, stream_id>> live_;
  std::uint64_t live_bytes_ = 0;
  std::uint64_t peak_ = 0;
  std::uint64_t allocations_ = 0;
};

TEST(TraceLoop, DrivesAnyReplayTargetThroughTheSameLoop) {
  const auto events = parse_alloc_trace(training_step);
  const Device device = Device::sim();
  const replay_streams streams = make_replay_streams(events, device);
  ASSERT_EQ(streams.size(), 2u);
  recording_target target;
  const replay_result r = replay_alloc_trace(events, streams, target, replay_loop{.iterations = 3});
  ASSERT_EQ(r.iterations.size(), 3u);
  EXPECT_EQ(r.iterations[0].operations, 7u);  // the same passes as through the caching allocator
  EXPECT_EQ(r.iterations[1].operations, 6u);
  // Each pass reads the target's own counters, from a peak restarted at the pass.
  EXPECT_EQ(target.peak_resets, 3u);
  EXPECT_EQ(r.iterations[0].device_calls, 4u);
  EXPECT_EQ(r.iterations[2].device_calls, 3u);
  EXPECT_EQ(r.device_allocations, 10u);
  EXPECT_EQ(r.iterations[2].peak_reserved_bytes, 3000000u + 4000000 + 6000000);
  // The trace's record_stream reaches the target, naming the stream that used the block.
  const std::vector<std::pair<std::size_t, stream_id>> on_stream_1(3, {1000, streams.at(1).id()});
  EXPECT_EQ(target.recorded, on_stream_1);
  EXPECT_EQ(target.live_blocks(), 0u);  // the kept weights too are given back at the end
}

TEST(TraceLoop, TheCachingTargetCountsWhatTheAllocatorCounts) {
  const auto events = parse_alloc_trace(training_step);
  const Device device = Device::sim();
  const replay_streams streams = make_replay_streams(events, device);
  const std::unique_ptr<replay_target> target = make_caching_replay_target(device, allocator_options{});
  const replay_result r = replay_alloc_trace(events, streams, *target, replay_loop{.iterations = 2});
  const replay_result direct = replay_alloc_trace(events, device, allocator_options{}, replay_loop{.iterations = 2});
  EXPECT_GT(r.iterations[0].device_calls, 0u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.iterations[i].device_calls, direct.iterations[i].device_calls) << "pass " << i;
    EXPECT_EQ(r.iterations[i].peak_reserved_bytes, direct.iterations[i].peak_reserved_bytes) << "pass " << i;
  }
  EXPECT_EQ(target->counters().device_allocations, r.device_allocations);
}

TEST(AllocatorStats, CountsDeviceCallsAndHostSyncs) {
  const Device device = Device::sim();
  Stream stream(device);
  caching_allocator allocator(device, allocator_options{});
  EXPECT_EQ(allocator.stats().device_calls.total(), 0u);
  void* p = allocator.allocate(5u << 20, stream);
  const device_call_counts grown = allocator.stats().device_calls;
  EXPECT_EQ(grown.reserve, 1u);
  EXPECT_EQ(grown.create, 3u);  // three 2 MiB chunks
  EXPECT_EQ(grown.map, 3u);
  EXPECT_EQ(grown.set_access, 3u);
  EXPECT_EQ(grown.release, 3u);  // each handle as soon as it is mapped: the mapping keeps the memory
  allocator.deallocate(p);
  EXPECT_EQ(allocator.stats().num_host_syncs, 0u);
  allocator.empty_cache();
  const allocator_stats emptied = allocator.stats();
  EXPECT_EQ(emptied.device_calls.unmap, 1u);  // the three chunks lie side by side: one call
  EXPECT_EQ(emptied.device_calls.release, 3u);
  EXPECT_EQ(emptied.num_host_syncs, 1u);  // the one stream, before its chunks went
}

// settle's placement (here rather than with the growth tests: it is what makes the loop replays
// above settle): of equal free blocks the lowest address, not the most recently freed.
TEST(SettleGrowth, PlacesByBestFitLowestAddressFirst) {
  const Device device = Device::sim();
  Stream stream(device);
  for (const expandable_growth growth : {expandable_growth::settle, expandable_growth::map_new}) {
    caching_allocator allocator(device, allocator_options{.growth = growth});
    constexpr std::size_t block = 3u << 20;
    std::vector<void*> blocks;
    for (int i = 0; i < 5; ++i) blocks.push_back(allocator.allocate(block, stream));
    allocator.deallocate(blocks[1]);
    allocator.deallocate(blocks[3]);  // freed last: the bins' first pick
    void* again = allocator.allocate(block, stream);
    EXPECT_EQ(again, growth == expandable_growth::settle ? blocks[1] : blocks[3]) << static_cast<int>(growth);
    allocator.deallocate(again);
    for (const int i : {0, 2, 4}) allocator.deallocate(blocks[i]);
  }
}

}  // namespace
}  // namespace streamsafe
