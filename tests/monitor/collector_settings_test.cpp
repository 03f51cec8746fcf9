// The collector's pure pieces: the diagnostic settings read from the environment
// (STREAMSAFE_CUPTI_KINDS, STREAMSAFE_CUPTI_CLOCK, STREAMSAFE_COLLECTOR_OBSERVER) and which
// steps or which stretches of time sampled always-on collects (the one duty cycle behind both).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "monitor/collect/diagnostic_settings.hpp"
#include "monitor/collect/sampling.hpp"

namespace streamsafe::monitor::detail {
namespace {

TEST(DiagnosticSettings, UnsetMeansTheNormalBehaviour) {
  const auto settings = parse_diagnostic_settings(nullptr, nullptr, nullptr);
  EXPECT_TRUE(settings.is_default());
  EXPECT_EQ(settings.kinds, device_kind_set{});
  EXPECT_EQ(settings.clock, cupti_clock::host);
  EXPECT_TRUE(settings.observer);
  EXPECT_EQ(settings.describe(), "");
  EXPECT_TRUE(parse_diagnostic_settings("all", "host", "on").is_default());
  EXPECT_TRUE(parse_diagnostic_settings("", "", "").is_default());
}

TEST(DiagnosticSettings, KindsAreACommaListOrNone) {
  const auto two = parse_diagnostic_settings("memcpy, kernel", nullptr, nullptr);
  EXPECT_EQ(two.kinds, (device_kind_set{.kernel = true, .memcpy = true, .memset = false}));
  EXPECT_EQ(two.describe(), "kinds=kernel,memcpy");
  const auto one = parse_diagnostic_settings("memset", nullptr, nullptr);
  EXPECT_EQ(one.kinds, (device_kind_set{.kernel = false, .memcpy = false, .memset = true}));
  const auto none = parse_diagnostic_settings("none", nullptr, nullptr);
  EXPECT_EQ(none.kinds, (device_kind_set{false, false, false}));
  EXPECT_EQ(none.describe(), "kinds=none");
  EXPECT_FALSE(none.is_default());
}

TEST(DiagnosticSettings, ClockAndObserver) {
  const auto settings = parse_diagnostic_settings(nullptr, "cupti", "off");
  EXPECT_EQ(settings.clock, cupti_clock::cupti);
  EXPECT_FALSE(settings.observer);
  EXPECT_EQ(settings.describe(), "clock=cupti observer=off");
}

TEST(DiagnosticSettings, AnUnknownValueKeepsItsDefaultAndIsReported) {
  const auto settings = parse_diagnostic_settings("kernel,launches", "gpu", "maybe");
  EXPECT_EQ(settings.kinds, device_kind_set{});
  EXPECT_EQ(settings.clock, cupti_clock::host);
  EXPECT_TRUE(settings.observer);
  ASSERT_EQ(settings.problems.size(), 3u);
  EXPECT_NE(settings.problems[0].find("'launches'"), std::string::npos) << settings.problems[0];
  EXPECT_FALSE(settings.is_default());  // so the status message shows the problems
  EXPECT_NE(settings.describe().find("STREAMSAFE_CUPTI_CLOCK"), std::string::npos);
}

TEST(DutyCycle, EachPeriodOpensWithItsWindow) {
  const duty_cycle cycle(10, 3);
  EXPECT_TRUE(cycle.sampling());
  std::vector<bool> in;
  for (std::uint64_t p = 0; p < 12; ++p) in.push_back(cycle.in_window(p));
  EXPECT_EQ(in, (std::vector<bool>{true, true, true, false, false, false, false, false, false, false, true, true}));
  // Where it changes next: the window's end inside it, the next period's start outside it.
  EXPECT_EQ(cycle.next_change(0), 3u);
  EXPECT_EQ(cycle.next_change(2), 3u);
  EXPECT_EQ(cycle.next_change(3), 10u);
  EXPECT_EQ(cycle.next_change(9), 10u);
  EXPECT_EQ(cycle.next_change(10), 13u);
}

TEST(DutyCycle, CountsThePositionsInWindowsBeforeAPosition) {
  const duty_cycle cycle(10, 3);
  EXPECT_EQ(cycle.in_window_before(0), 0u);
  EXPECT_EQ(cycle.in_window_before(2), 2u);
  EXPECT_EQ(cycle.in_window_before(3), 3u);
  EXPECT_EQ(cycle.in_window_before(10), 3u);
  EXPECT_EQ(cycle.in_window_before(11), 4u);
  EXPECT_EQ(cycle.in_window_before(25), 9u);  // [0,3), [10,13), [20,23)
  // The same count, position by position.
  std::uint64_t counted = 0;
  for (std::uint64_t p = 0; p < 57; ++p) counted += cycle.in_window(p) ? 1 : 0;
  EXPECT_EQ(cycle.in_window_before(57), counted);
}

TEST(DutyCycle, NoSamplingWithoutAWindowShorterThanThePeriod) {
  for (const auto& cycle : {duty_cycle(0, 0), duty_cycle(10, 0), duty_cycle(0, 5), duty_cycle(10, 10), duty_cycle(10, 20)}) {
    EXPECT_FALSE(cycle.sampling());
    EXPECT_TRUE(cycle.in_window(7));
    EXPECT_EQ(cycle.in_window_before(7), 7u);
    EXPECT_EQ(cycle.next_change(7), duty_cycle::never);
  }
}

std::vector<bool> sampled_steps(step_sampler sampler, int count) {
  std::vector<bool> sampled;
  for (int i = 0; i < count; ++i) {
    sampled.push_back(sampler.in_window());
    sampler.end_step(sampler.in_window());
  }
  return sampled;
}

TEST(StepSampler, OpensAWindowAtTheStartOfEveryPeriod) {
  EXPECT_EQ(sampled_steps(step_sampler(4, 1), 9), (std::vector<bool>{true, false, false, false, true, false, false, false, true}));
  EXPECT_EQ(sampled_steps(step_sampler(3, 2), 6), (std::vector<bool>{true, true, false, true, true, false}));
}

TEST(StepSampler, EveryStepWithoutSampling) {
  for (const auto& sampler : {step_sampler(0, 1), step_sampler(1, 1), step_sampler(4, 4), step_sampler(4, 9)}) {
    EXPECT_FALSE(sampler.sampling());
    EXPECT_EQ(sampled_steps(sampler, 5), std::vector<bool>(5, true));
  }
}

TEST(StepSampler, FractionOfEndedStepsCollected) {
  step_sampler sampler(4, 1);
  EXPECT_DOUBLE_EQ(sampler.collected_fraction(), 1.0);  // step 0 in progress, sampled
  for (int i = 0; i < 8; ++i) sampler.end_step(sampler.in_window());
  EXPECT_EQ(sampler.steps(), 8u);
  EXPECT_DOUBLE_EQ(sampler.collected_fraction(), 0.25);
  sampler.end_step(true);  // e.g. a traced step outside the window
  EXPECT_DOUBLE_EQ(sampler.collected_fraction(), 3.0 / 9.0);
}

using std::chrono::nanoseconds;

TEST(TimeSampler, IsDueAtEachWindowBoundary) {
  time_sampler sampler(nanoseconds(100), nanoseconds(10), 1000);  // starts at t = 1000
  EXPECT_TRUE(sampler.sampling());
  EXPECT_TRUE(sampler.in_window());
  EXPECT_FALSE(sampler.due(1009));
  EXPECT_TRUE(sampler.due(1010));  // the first window closes
  sampler.advance(1042, false);
  EXPECT_FALSE(sampler.in_window());
  EXPECT_FALSE(sampler.due(1099));
  EXPECT_TRUE(sampler.due(1100));  // the second opens
  sampler.advance(1250, false);    // a callback late by one and a half periods
  EXPECT_FALSE(sampler.in_window());
  EXPECT_TRUE(sampler.due(1300));
  sampler.advance(1305, false);
  EXPECT_TRUE(sampler.in_window());
  EXPECT_TRUE(sampler.due(1310));
}

TEST(TimeSampler, FractionIsTheTimeInsideWindows) {
  time_sampler sampler(nanoseconds(100), nanoseconds(10), 1000);
  EXPECT_DOUBLE_EQ(sampler.collected_fraction(), 1.0);  // no time passed
  sampler.advance(1005, false);
  EXPECT_DOUBLE_EQ(sampler.collected_fraction(), 1.0);
  // However rarely it advances, the windows it skipped over count: [0,10), [100,110), [200,210).
  sampler.advance(1250, false);
  EXPECT_DOUBLE_EQ(sampler.collected_fraction(), 30.0 / 250.0);
  sampler.advance(1400, false);
  EXPECT_DOUBLE_EQ(sampler.collected_fraction(), 40.0 / 400.0);
}

TEST(TimeSampler, TracedTimeCountsInFull) {
  time_sampler sampler(nanoseconds(100), nanoseconds(10), 0);
  sampler.advance(20, false);  // [0,10) sampled
  sampler.advance(70, true);   // [20,70) traced
  sampler.advance(100, false);
  EXPECT_DOUBLE_EQ(sampler.collected_fraction(), 60.0 / 100.0);
}

TEST(TimeSampler, AnEarlierClockReadingDoesNotGoBack) {
  time_sampler sampler(nanoseconds(100), nanoseconds(10), 0);
  sampler.advance(150, false);
  sampler.advance(120, false);  // another thread read the clock first, locked second
  EXPECT_DOUBLE_EQ(sampler.collected_fraction(), 20.0 / 150.0);
  EXPECT_FALSE(sampler.in_window());
  sampler.advance(-5, false);  // before the start: still the current position
  EXPECT_DOUBLE_EQ(sampler.collected_fraction(), 20.0 / 150.0);
}

TEST(TimeSampler, OffIsNeverDue) {
  for (const auto& sampler : {time_sampler(nanoseconds(0), nanoseconds(0), 0), time_sampler(nanoseconds(100), nanoseconds(0), 0),
                              time_sampler(nanoseconds(100), nanoseconds(100), 0), time_sampler(nanoseconds(-5), nanoseconds(1), 0)}) {
    EXPECT_FALSE(sampler.sampling());
    EXPECT_FALSE(sampler.due(std::numeric_limits<std::int64_t>::max() - 1));
    EXPECT_TRUE(sampler.in_window());
  }
}

}  // namespace
}  // namespace streamsafe::monitor::detail
