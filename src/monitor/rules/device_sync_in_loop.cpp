// Rule device_sync_in_loop: cudaDeviceSynchronize drains every stream of the device; inside a
// loop it kills the overlap between iterations.
#include "monitor/rules/rules.hpp"
#include "monitor/text_format.hpp"

namespace streamsafe::monitor::detail {

std::optional<finding> check_device_sync_in_loop(const diagnosis_input& in) {
  const call_spread spread = spread_of(in, call_kind::device_sync);
  if (spread.iterations_with_call < 2) return std::nullopt;
  finding f{finding_kind::device_sync_in_loop, spread.calls, 0, {}, {}, {}};
  std::size_t stalls = 0;
  for (const auto& gap : in.gaps) {
    if (gap.cause != gap_cause::host_sync || !gap.host_call) continue;
    if (in.t.calls[*gap.host_call].kind != call_kind::device_sync) continue;
    f.cost_us += gap.length_us();
    ++stalls;
    if (f.ops.size() < 3) f.ops.push_back(gap.after_op);
  }
  const runtime_call& first = in.t.calls[spread.first_call];
  f.evidence = std::string(in.t.name_of(first)) + " called " + std::to_string(spread.calls) + " times, in " +
               std::to_string(spread.iterations_with_call) +
               (in.iterations.iterations.empty() ? " places" : " of " + std::to_string(in.iterations.iterations.size()) + " iterations") +
               " (first at " + format_time(first.ts_us, in.origin_us) + "); " + std::to_string(stalls) +
               " stream idle gaps (" + format_duration(f.cost_us) + ") end only after the host returned from it";
  f.fix = "synchronise only what the host needs: cudaStreamSynchronize on one stream or cudaEventSynchronize on "
          "an event recorded after the op, or order streams with cudaStreamWaitEvent and drop the sync";
  return f;
}

}  // namespace streamsafe::monitor::detail
