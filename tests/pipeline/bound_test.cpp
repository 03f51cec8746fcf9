// The bound: the busiest resource's work per step, from the stages' times alone.
#include <gtest/gtest.h>

#include <vector>

#include "streamsafe/pipeline/bound.hpp"

namespace streamsafe::pipeline {

namespace {

// The copy-bound shape of the H200 measurement: H2D 2.79 ms, preprocess 1.77, compute 1.12.
TEST(Bound, KernelStagesShareTheSMsAndCopiesTheirEngine) {
  const std::vector<stage_time> stages = {{"h2d", stage_resource::copy_h2d, 2790, 2800},
                                          {"preprocess", stage_resource::compute, 1770, 1800},
                                          {"compute", stage_resource::compute, 1120, 1150}};
  const bound_report report = compute_bound(stages, 2930);
  EXPECT_DOUBLE_EQ(report.h2d_us, 2790);
  EXPECT_DOUBLE_EQ(report.sm_us, 2890);
  EXPECT_DOUBLE_EQ(report.bound_us, 2890);
  EXPECT_EQ(report.limit, stage_resource::compute);
  EXPECT_DOUBLE_EQ(report.efficiency, 2890.0 / 2930.0);
}

TEST(Bound, EachCopyDirectionIsItsOwnResource) {
  const std::vector<stage_time> stages = {{"h2d", stage_resource::copy_h2d, 700, 0},
                                          {"d2h", stage_resource::copy_d2h, 600, 0},
                                          {"all_reduce", stage_resource::network, 650, 0},
                                          {"compute", stage_resource::compute, 500, 0}};
  const bound_report report = compute_bound(stages, 0);
  EXPECT_DOUBLE_EQ(report.bound_us, 700);
  EXPECT_EQ(report.limit, stage_resource::copy_h2d);
  EXPECT_DOUBLE_EQ(report.network_us, 650);
  EXPECT_DOUBLE_EQ(report.efficiency, 0);  // no step measured
  EXPECT_EQ(resource_name(report.limit), "copy_h2d");
}

}  // namespace

}  // namespace streamsafe::pipeline
