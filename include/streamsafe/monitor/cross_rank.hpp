// Figures across the ranks of one data-parallel run, from one trace per rank: the ranks' clocks
// put on one time line, each rank's communication that nothing hid, and for each step the rank
// the others waited for (the straggler).
//
// Clocks. Each rank's trace counts from its own origin in its own writer's clock. Ranks on one
// host share a clock; across hosts they drift. A collective ends on every rank at about the same
// moment (no rank leaves an all-reduce before the last one's data arrived), so the k-th
// communication kernel of each rank is taken as the same collective, and a rank's offset is the
// median, over the collectives every rank has, of rank 0's end minus its own. With no collective
// on some rank, the ranks are aligned on their writers' clocks alone, and the report says so.
//
// The pairing by position holds only when every trace covers the same collectives: ranks whose
// counts differ are flagged, and the spread of the paired ends around each rank's offset says
// how well the clocks agree (a spread of a whole step means the pairing is off by one).
//
// Straggler. A rank reaches a step's first collective when its kernel starts there; the others
// sit in it until the last rank arrives. The straggler of a step is the rank that arrives last,
// and its lead is how long the first rank to arrive waited for it; a lead within the clocks'
// spread names no one (an even step). Without aligned clocks no straggler is named.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "streamsafe/monitor/analysis.hpp"

namespace streamsafe::monitor {

enum class clock_alignment : std::uint8_t { collectives, writer_clocks };

[[nodiscard]] std::string_view to_string(clock_alignment how);

struct rank_figures {
  std::size_t rank = 0;
  /// Added to the rank's ts_us (after its origin is put on rank 0's) to reach rank 0's time line.
  double offset_us = 0;
  double communication_us = 0;  ///< union of its communication kernels
  /// Communication while no compute or copy ran on the rank: the time collectives cost it.
  double exposed_communication_us = 0;
  std::size_t collectives = 0;  ///< communication kernels seen
  /// Largest distance of a paired collective's end from where the offset puts it (0 for rank 0).
  double clock_spread_us = 0;
};

struct step_arrival {
  std::size_t rank = 0;
  double arrival_us = 0;  ///< first collective's start in the step, on rank 0's time line
};

struct cross_rank_step {
  std::size_t step = 0;
  std::vector<step_arrival> arrivals;  ///< ranks with a collective in this step
  std::size_t straggler = 0;     ///< the last to arrive
  double straggler_lead_us = 0;  ///< last arrival minus first
  bool even = false;             ///< the lead is within the clocks' spread: no straggler
};

struct cross_rank_report {
  clock_alignment alignment = clock_alignment::writer_clocks;
  std::size_t matched_collectives = 0;  ///< collectives used to align (the fewest any rank has)
  bool equal_collective_counts = true;  ///< false: the traces cover different collectives
  double clock_spread_us = 0;           ///< the largest rank's clock_spread_us
  std::vector<rank_figures> ranks;
  /// Steps that every rank has, with a collective on two ranks or more; none without aligned clocks.
  std::vector<cross_rank_step> steps;
};

/// Needs two ranks or more (an empty report otherwise). The traces and analyses are read only.
[[nodiscard]] cross_rank_report analyze_ranks(std::span<const rank_report> ranks);

}  // namespace streamsafe::monitor
