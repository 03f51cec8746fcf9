// The evidence sentence of an idle gap. Kept apart from the classifier: detection decides,
// this only words the decision.
#include <cstdio>

#include "monitor/text_format.hpp"
#include "streamsafe/monitor/idle_gaps.hpp"

namespace streamsafe::monitor {

namespace {
std::string percent(double fraction) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%.0f%%", fraction * 100);
  return buffer;
}

std::string call_text(const trace& t, std::size_t call, double origin) {
  const runtime_call& c = t.calls[call];
  return std::string(t.name_of(c)) + " (host thread " + std::to_string(c.thread) + ", " +
         detail::format_time(c.ts_us, origin) + ", " + detail::format_duration(c.dur_us) + ")";
}
}  // namespace

std::string describe(const trace& t, const idle_gap& gap, double origin) {
  using detail::format_op;
  const std::string head = detail::format_duration(gap.length_us()) + " idle on " + detail::format_stream(t, gap.stream) +
                           " before " + format_op(t, gap.after_op, origin) + ": ";
  switch (gap.cause) {
    case gap_cause::event_wait:
      return head + "waiting on an event from " + detail::format_stream(t, t.ops[*gap.producer_op].stream) +
             " recorded after " + format_op(t, *gap.producer_op, origin) +
             (gap.wait == wait_evidence::declared ? " (declared dependency)"
                                                  : " (inferred: cudaStreamWaitEvent before the launch, start follows its end)");
    case gap_cause::host_sync:
      return head + "the host was blocked in " + call_text(t, *gap.host_call, origin) + " and launched the op only after it returned";
    case gap_cause::launch_bound:
      return head + "launched late by " + call_text(t, *gap.host_call, origin) + "; the host spent " +
             percent(gap.host_api_fraction) + " of the delay in CUDA API calls (launch-bound)";
    case gap_cause::nothing_queued:
      return head + "nothing was queued: the launch " + call_text(t, *gap.host_call, origin) +
             " came after the stream drained, the host spent " + percent(gap.host_api_fraction) +
             " of that time in CUDA API calls";
    case gap_cause::unexplained:
      if (gap.producer_op) {
        return head + "the op was queued in time and started as " + format_op(t, *gap.producer_op, origin) +
               " ended: an implicit dependency (e.g. the legacy default stream)";
      }
      return head + "the op was queued in time (or its launch is unknown) and no dependency explains the delay";
  }
  return head;
}

}  // namespace streamsafe::monitor
