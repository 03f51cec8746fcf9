#include "streamsafe/pipeline/bound.hpp"

namespace streamsafe::pipeline {

bound_report compute_bound(std::span<const stage_time> stages, double step_us) {
  bound_report report;
  for (const stage_time& stage : stages) {
    switch (stage.resource) {
      case stage_resource::copy_h2d: report.h2d_us += stage.alone_us; break;
      case stage_resource::copy_d2h: report.d2h_us += stage.alone_us; break;
      case stage_resource::compute: report.sm_us += stage.alone_us; break;
      case stage_resource::network: report.network_us += stage.alone_us; break;
    }
  }
  const std::pair<double, stage_resource> resources[] = {{report.sm_us, stage_resource::compute},
                                                         {report.h2d_us, stage_resource::copy_h2d},
                                                         {report.d2h_us, stage_resource::copy_d2h},
                                                         {report.network_us, stage_resource::network}};
  for (const auto& [us, resource] : resources) {
    if (us > report.bound_us) {
      report.bound_us = us;
      report.limit = resource;
    }
  }
  report.step_us = step_us;
  report.efficiency = step_us > 0 ? report.bound_us / step_us : 0;
  return report;
}

std::string_view resource_name(stage_resource resource) noexcept {
  switch (resource) {
    case stage_resource::copy_h2d: return "copy_h2d";
    case stage_resource::copy_d2h: return "copy_d2h";
    case stage_resource::compute: return "compute";
    case stage_resource::network: return "network";
  }
  return "?";
}

}  // namespace streamsafe::pipeline
