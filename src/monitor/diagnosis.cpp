#include "streamsafe/monitor/diagnosis.hpp"

#include "monitor/rules/rules.hpp"

namespace streamsafe::monitor {

std::string_view to_string(finding_kind kind) {
  switch (kind) {
    case finding_kind::pageable_copy: return "pageable_copy";
    case finding_kind::default_stream_copy: return "default_stream_copy";
    case finding_kind::device_sync_in_loop: return "device_sync_in_loop";
    case finding_kind::serializing_wait: return "serializing_wait";
    case finding_kind::too_many_streams: return "too_many_streams";
    case finding_kind::event_per_iteration: return "event_per_iteration";
    case finding_kind::unneeded_timing_events: return "unneeded_timing_events";
  }
  return "?";
}

std::vector<finding> diagnose(const diagnosis_input& input) {
  using rule = std::optional<finding> (*)(const diagnosis_input&);
  static constexpr rule rules[] = {
      detail::check_pageable_copies,     detail::check_default_stream_copies, detail::check_device_sync_in_loop,
      detail::check_serializing_waits,   detail::check_too_many_streams,      detail::check_event_per_iteration,
      detail::check_unneeded_timing_events,
  };
  std::vector<finding> findings;
  for (rule check : rules) {
    if (auto found = check(input)) findings.push_back(std::move(*found));
  }
  return findings;
}

namespace detail {

call_spread spread_of(const diagnosis_input& in, call_kind kind) {
  call_spread spread;
  for (std::size_t i = 0; i < in.t.calls.size(); ++i) {
    if (in.t.calls[i].kind != kind) continue;
    if (spread.calls++ == 0) spread.first_call = i;
  }
  if (in.iterations.iterations.empty()) {
    // No loop structure known: each call stands for one turn of the loop.
    spread.iterations_with_call = spread.calls;
    return spread;
  }
  for (const auto& iteration : in.iterations.iterations) {
    for (std::size_t call : iteration.calls) {
      if (in.t.calls[call].kind == kind) {
        ++spread.iterations_with_call;
        break;
      }
    }
  }
  return spread;
}

}  // namespace detail
}  // namespace streamsafe::monitor
