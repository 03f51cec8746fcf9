// The diagnosis rules, one per file. Each returns a finding when it fires. Internal.
#pragma once

#include <optional>

#include "streamsafe/monitor/diagnosis.hpp"

namespace streamsafe::monitor::detail {

[[nodiscard]] std::optional<finding> check_pageable_copies(const diagnosis_input& in);
[[nodiscard]] std::optional<finding> check_default_stream_copies(const diagnosis_input& in);
[[nodiscard]] std::optional<finding> check_device_sync_in_loop(const diagnosis_input& in);
[[nodiscard]] std::optional<finding> check_serializing_waits(const diagnosis_input& in);
[[nodiscard]] std::optional<finding> check_too_many_streams(const diagnosis_input& in);
[[nodiscard]] std::optional<finding> check_event_per_iteration(const diagnosis_input& in);
[[nodiscard]] std::optional<finding> check_unneeded_timing_events(const diagnosis_input& in);

/// How many iterations hold at least one call of `kind` (each call counts as one iteration when
/// the run has no iterations), and how many such calls there are in all.
struct call_spread {
  std::size_t iterations_with_call = 0;
  std::size_t calls = 0;
  std::size_t first_call = 0;  // index into trace::calls, valid when calls > 0
};
[[nodiscard]] call_spread spread_of(const diagnosis_input& in, call_kind kind);

}  // namespace streamsafe::monitor::detail
