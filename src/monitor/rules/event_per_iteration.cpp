// Rule event_per_iteration: creating events inside the loop costs a driver call each time and
// churns handles; events are meant to be re-recorded.
#include "monitor/rules/rules.hpp"
#include "monitor/text_format.hpp"

namespace streamsafe::monitor::detail {

std::optional<finding> check_event_per_iteration(const diagnosis_input& in) {
  if (in.iterations.iterations.size() < 2) return std::nullopt;
  const call_spread spread = spread_of(in, call_kind::event_create);
  if (spread.iterations_with_call < 2) return std::nullopt;
  finding f{finding_kind::event_per_iteration, spread.calls, 0, {}, {}, {}};
  for (const auto& call : in.t.calls) {
    if (call.kind == call_kind::event_create) f.cost_us += call.dur_us;
  }
  f.evidence = std::to_string(spread.calls) + " event creations in " + std::to_string(spread.iterations_with_call) +
               " of " + std::to_string(in.iterations.iterations.size()) + " iterations (first at " +
               format_time(in.t.calls[spread.first_call].ts_us, in.origin_us) + ")";
  f.fix = "create the events once before the loop (or take them from an event pool) and re-record them every "
          "iteration";
  return f;
}

}  // namespace streamsafe::monitor::detail
