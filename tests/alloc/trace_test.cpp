// The allocation trace parser and the replay.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/error.hpp"

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

}  // namespace
}  // namespace streamsafe
