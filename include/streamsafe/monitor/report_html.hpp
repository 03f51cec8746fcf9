// A self-contained HTML report (`streamsafe report --html FILE`): per rank, a timeline picture
// (inline SVG: one row per stream, compute / copy / communication work coloured, idle gaps marked
// by cause) and the tables of the terminal summary. No scripts, fonts or links: it opens offline.
#pragma once

#include <ostream>
#include <span>

#include "streamsafe/monitor/analysis.hpp"

namespace streamsafe::monitor {

void write_report_html(std::ostream& out, std::span<const rank_report> ranks);

}  // namespace streamsafe::monitor
