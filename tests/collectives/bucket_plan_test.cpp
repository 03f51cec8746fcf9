#include "streamsafe/pipeline/collectives/bucket_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "streamsafe/error.hpp"

namespace streamsafe::collectives {
namespace {

std::vector<gradient> layers() {
  return {{"fc1.weight", 4096}, {"fc1.bias", 64}, {"fc2.weight", 2048}, {"fc2.bias", 32}, {"fc3.weight", 8192},
          {"fc3.bias", 16}};
}

TEST(BucketPlan, FollowsBackwardOrderUnderTheCap) {
  const auto grads = layers();
  const bucket_plan plan(grads, 4200);
  // Reverse parameter order: fc3.bias, fc3.weight (8192 > cap: alone), fc2.bias + fc2.weight, ...
  ASSERT_EQ(plan.buckets().size(), 4U);
  EXPECT_EQ(plan.buckets()[0].gradients, (std::vector<std::size_t>{5}));
  EXPECT_EQ(plan.buckets()[1].gradients, (std::vector<std::size_t>{4}));
  EXPECT_EQ(plan.buckets()[2].gradients, (std::vector<std::size_t>{3, 2, 1}));
  EXPECT_EQ(plan.buckets()[3].gradients, (std::vector<std::size_t>{0}));
  EXPECT_EQ(plan.buckets()[2].name, "bucket 2 [fc2.bias..fc1.bias]");
  EXPECT_EQ(plan.buckets()[2].bytes, 32U + 2048U + 64U);
}

TEST(BucketPlan, EveryGradientInExactlyOneBucketAtItsOwnBytes) {
  const auto grads = layers();
  const bucket_plan plan(grads, 3000);
  std::vector<int> seen(grads.size(), 0);
  std::size_t end_of_previous = 0;
  for (const auto& b : plan.buckets()) {
    EXPECT_EQ(b.offset % 256, 0U) << b.name;
    EXPECT_GE(b.offset, end_of_previous) << b.name;
    std::size_t cursor = b.offset;
    for (std::size_t g : b.gradients) {
      ++seen[g];
      EXPECT_EQ(&plan.bucket_of(g), &b);
      EXPECT_EQ(plan.offset_of(g), cursor) << grads[g].name;
      cursor += grads[g].bytes;
    }
    EXPECT_EQ(cursor, b.offset + b.bytes);
    end_of_previous = b.offset + b.bytes;
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  EXPECT_EQ(plan.total_bytes(), end_of_previous);
}

TEST(BucketPlan, SameInputSamePlan) {
  const auto grads = layers();
  const bucket_plan a(grads, 5000);
  const bucket_plan b(grads, 5000);
  ASSERT_EQ(a.buckets().size(), b.buckets().size());
  for (std::size_t i = 0; i < a.buckets().size(); ++i) {
    EXPECT_EQ(a.buckets()[i].gradients, b.buckets()[i].gradients);
    EXPECT_EQ(a.buckets()[i].offset, b.buckets()[i].offset);
  }
}

TEST(BucketPlan, DefaultCapKeepsSmallModelsInOneBucket) {
  const auto grads = layers();
  const bucket_plan plan(grads);
  EXPECT_EQ(plan.cap_bytes(), std::size_t{25} << 20);
  ASSERT_EQ(plan.buckets().size(), 1U);
  EXPECT_EQ(plan.buckets()[0].gradients.size(), grads.size());
}

TEST(BucketPlan, RejectsWhatCannotBeReduced) {
  const std::vector<gradient> none;
  EXPECT_THROW(bucket_plan(none, 100), usage_error);
  const std::vector<gradient> odd{{"w", 6}};
  EXPECT_THROW(bucket_plan(odd, 100), usage_error);
  const auto grads = layers();
  EXPECT_THROW(bucket_plan(grads, 0), usage_error);
}

}  // namespace
}  // namespace streamsafe::collectives
