// What a collection source (sim timing hook, CUPTI) hands the collector for each GPU op, before
// it is reduced online or kept in a trace. Internal to the collector.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "streamsafe/monitor/trace.hpp"

namespace streamsafe::monitor::detail {

/// Microseconds on the host's steady clock: the one timeline of a collected trace.
[[nodiscard]] inline double host_us(std::chrono::steady_clock::time_point at) {
  return std::chrono::duration<double, std::micro>(at.time_since_epoch()).count();
}
[[nodiscard]] inline double host_now_us() { return host_us(std::chrono::steady_clock::now()); }

struct op_record {
  stream_key stream;
  op_kind kind = op_kind::kernel;
  std::string_view name;  // valid during the call only
  double ts_us = 0;
  double dur_us = 0;
  double enqueued_us = -1;  // host time of the launch call; -1: unknown
  std::uint64_t bytes = 0;
  memory_kind src = memory_kind::unknown;
  memory_kind dst = memory_kind::unknown;
  std::int64_t correlation = -1;
};

}  // namespace streamsafe::monitor::detail
