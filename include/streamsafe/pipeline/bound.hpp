// The bound of a pipeline: the step time no schedule can beat, from each stage's time measured
// alone. Stages on one resource cannot overlap each other, so each resource needs at least the
// sum of its stages' times per step; the busiest resource sets the bound. Copy engines count one
// per direction (H2D and D2H run at once on a GPU with two), kernels share the SMs, collectives
// the network. Efficiency = bound / measured step: 1 is the hardware's limit.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "streamsafe/pipeline/stage.hpp"

namespace streamsafe::pipeline {

struct stage_time {
  std::string name;
  stage_resource resource = stage_resource::compute;
  double alone_us = 0;  ///< per step, with no other stage running
  double busy_us = 0;   ///< per step, in the overlapped run
};

struct bound_report {
  double h2d_us = 0;
  double d2h_us = 0;
  double sm_us = 0;
  double network_us = 0;
  double bound_us = 0;
  stage_resource limit = stage_resource::compute;  ///< the busiest resource
  double step_us = 0;
  double efficiency = 0;  ///< bound_us / step_us; 0 when step_us is 0
};

/// Pure arithmetic over the figures given; no measurement.
[[nodiscard]] bound_report compute_bound(std::span<const stage_time> stages, double step_us);

/// "copy_h2d", "copy_d2h", "compute", "network".
[[nodiscard]] std::string_view resource_name(stage_resource resource) noexcept;

}  // namespace streamsafe::pipeline
