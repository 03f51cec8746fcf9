// Diagnosis of common multi-stream misuse. Each finding says what was seen (the evidence, with
// ops, streams and times), what it cost, and the fix. The rules, one per file in
// src/monitor/rules/:
//  - pageable_copy:          a memcpy from or to pageable host memory (slow, and synchronous).
//  - default_stream_copy:    a memcpy on the legacy default stream while other streams have work:
//                            it waits for and blocks every blocking stream.
//  - device_sync_in_loop:    cudaDeviceSynchronize in two or more iterations.
//  - serializing_wait:       two streams linked by event waits that were never busy together.
//  - too_many_streams:       more streams with work than were ever busy at once.
//  - event_per_iteration:    events created in two or more iterations instead of being reused.
//  - unneeded_timing_events: events created with timing on (cudaEventCreate) while no
//                            cudaEventElapsedTime is ever called.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "streamsafe/monitor/idle_gaps.hpp"
#include "streamsafe/monitor/iterations.hpp"
#include "streamsafe/monitor/trace.hpp"
#include "streamsafe/monitor/usage.hpp"

namespace streamsafe::monitor {

enum class finding_kind : std::uint8_t {
  pageable_copy,
  default_stream_copy,
  device_sync_in_loop,
  serializing_wait,
  too_many_streams,
  event_per_iteration,
  unneeded_timing_events,
};

[[nodiscard]] std::string_view to_string(finding_kind kind);

struct finding {
  finding_kind kind = finding_kind::pageable_copy;
  std::size_t occurrences = 0;  // copies, calls, stream pairs, ... as the evidence says
  double cost_us = 0;           // time attributable to the misuse (0 when not measurable)
  std::string evidence;
  std::string fix;
  std::vector<std::size_t> ops;  // example ops (indices into trace::ops), may be empty
};

/// What the rules look at: the trace and the analyses already made of it.
struct diagnosis_input {
  const trace& t;
  const usage_report& usage;
  const iteration_plan& iterations;
  std::span<const idle_gap> gaps;
  double origin_us = 0;  // times in evidence are relative to it
};

/// Runs every rule; findings in the order of the list above.
[[nodiscard]] std::vector<finding> diagnose(const diagnosis_input& input);

}  // namespace streamsafe::monitor
