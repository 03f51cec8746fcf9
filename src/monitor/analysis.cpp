#include "streamsafe/monitor/analysis.hpp"

#include "monitor/text_format.hpp"

namespace streamsafe::monitor {

analysis analyze(const trace& t, const analysis_options& options) {
  analysis a;
  a.origin_us = detail::origin_of(t);
  a.usage = measure_usage(t);
  a.iterations = find_iterations(t, options.iteration_marker);
  std::vector<std::vector<std::size_t>> selections;
  selections.reserve(a.iterations.iterations.size());
  for (const auto& iteration : a.iterations.iterations) selections.push_back(iteration.ops);
  a.usage_per_iteration = measure_usage_each(t, selections);
  a.gaps = find_idle_gaps(t, options.gaps);
  for (const auto& device : a.usage.devices) a.critical_paths.push_back(find_critical_path(t, a.gaps, device.device));
  a.findings = diagnose({t, a.usage, a.iterations, a.gaps, a.origin_us});
  return a;
}

}  // namespace streamsafe::monitor
