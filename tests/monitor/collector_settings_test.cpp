// The collector's pure pieces: the diagnostic settings read from the environment
// (STREAMSAFE_CUPTI_KINDS, STREAMSAFE_CUPTI_CLOCK, STREAMSAFE_COLLECTOR_OBSERVER) and which
// steps sampled always-on collects.
#include <gtest/gtest.h>

#include <vector>

#include "monitor/collect/diagnostic_settings.hpp"
#include "monitor/collect/step_sampler.hpp"

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

}  // namespace
}  // namespace streamsafe::monitor::detail
