// Small formatting helpers shared by the monitor's human-readable outputs (evidence sentences,
// the terminal summary, the HTML report). Internal to the monitor.
#pragma once

#include <string>
#include <string_view>

#include "streamsafe/monitor/trace.hpp"

namespace streamsafe::monitor::detail {

/// "123.4 us" / "5.67 ms" / "1.234 s".
[[nodiscard]] std::string format_duration(double us);

/// A time relative to the run's origin, e.g. "t=1.234 ms".
[[nodiscard]] std::string format_time(double us, double origin_us);

/// "stream 13 (dev 0)" or the stream's name from the trace.
[[nodiscard]] std::string format_stream(const trace& t, const stream_key& stream);

/// An op as "kernel 'gemm…' on stream 7 (dev 0) at t=…", with long names shortened.
[[nodiscard]] std::string format_op(const trace& t, std::size_t op_index, double origin_us);

/// `name` cut to at most `width` characters, with an ellipsis when cut.
[[nodiscard]] std::string shorten(std::string_view name, std::size_t width);

/// Start of the earliest op, call or annotation: the origin that reported times count from.
[[nodiscard]] double origin_of(const trace& t);

}  // namespace streamsafe::monitor::detail
