// The terminal summary of `streamsafe report`: per device and stream figures, idle time by cause,
// the longest gaps with their evidence, the critical path and the findings with their fixes.
#pragma once

#include <ostream>
#include <span>

#include "streamsafe/monitor/analysis.hpp"

namespace streamsafe::monitor {

void write_report_text(std::ostream& out, std::span<const rank_report> ranks);

}  // namespace streamsafe::monitor
