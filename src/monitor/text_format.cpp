#include "monitor/text_format.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace streamsafe::monitor::detail {

std::string format_duration(double us) {
  char buffer[48];
  if (us >= 1e6) {
    std::snprintf(buffer, sizeof buffer, "%.3f s", us / 1e6);
  } else if (us >= 1e3) {
    std::snprintf(buffer, sizeof buffer, "%.2f ms", us / 1e3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.1f us", us);
  }
  return buffer;
}

std::string format_time(double us, double origin_us) { return "t=" + format_duration(us - origin_us); }

std::string format_stream(const trace& t, const stream_key& stream) {
  std::string text = "stream " + std::to_string(stream.stream) + " (dev " + std::to_string(stream.device) + ")";
  if (stream.stream == legacy_default_stream) text += " [legacy default]";
  // A user-given name says more than the number; the trace's own "stream N" says nothing new.
  if (auto it = t.stream_names.find(stream); it != t.stream_names.end() && !it->second.starts_with("stream ")) {
    text += " '" + it->second + "'";
  }
  return text;
}

std::string shorten(std::string_view name, std::size_t width) {
  if (name.size() <= width) return std::string(name);
  std::size_t cut = width > 3 ? width - 3 : 0;
  // Never split a UTF-8 sequence: back up over continuation bytes.
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return std::string(name.substr(0, cut)) + "...";
}

std::string format_op(const trace& t, std::size_t op_index, double origin_us) {
  const gpu_op& op = t.ops[op_index];
  return std::string(to_string(op.kind)) + " '" + shorten(t.name_of(op), 48) + "' on " + format_stream(t, op.stream) +
         " at " + format_time(op.ts_us, origin_us);
}

double origin_of(const trace& t) {
  double origin = std::numeric_limits<double>::infinity();
  if (!t.ops.empty()) origin = std::min(origin, t.ops.front().ts_us);
  if (!t.calls.empty()) origin = std::min(origin, t.calls.front().ts_us);
  if (!t.annotations.empty()) origin = std::min(origin, t.annotations.front().ts_us);
  return origin == std::numeric_limits<double>::infinity() ? 0 : origin;
}

}  // namespace streamsafe::monitor::detail
