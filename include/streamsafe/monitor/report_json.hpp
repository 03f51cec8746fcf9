// The machine-readable report (`streamsafe report --json`): one JSON object for all ranks. Every
// field is documented in docs/report.md; the layout is versioned by its "version" field.
#pragma once

#include <ostream>
#include <span>

#include "streamsafe/monitor/analysis.hpp"

namespace streamsafe::monitor {

/// Gaps listed individually per rank (the longest first); all gaps are counted in the totals.
inline constexpr std::size_t json_gap_limit = 100;

void write_report_json(std::ostream& out, std::span<const rank_report> ranks);

}  // namespace streamsafe::monitor
