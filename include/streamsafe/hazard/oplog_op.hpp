// One op of an op log (format v3, docs/oplog.md), as the reader yields it and the writer takes
// it. A view: the strings and ranges belong to whoever produced the op (the reader keeps them
// valid until its next call).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "streamsafe/hazard/ids.hpp"

namespace streamsafe::hazard {

/// The op log format version this build writes. It reads this one and every earlier one.
inline constexpr std::uint64_t oplog_version = 3;
/// The oldest version this build reads.
inline constexpr std::uint64_t oplog_oldest_version = 1;

enum class op_kind : std::uint8_t {
  stream,             // declares a stream's name
  alloc,              // ptr, size, stream
  free,               // ptr
  record_stream,      // ptr, stream
  kernel,             // stream, name, reads, writes
  copy,               // stream, src (in reads), dst (in writes)
  event_record,       // event, stream
  stream_wait_event,  // stream, event
  event_sync,         // event
  stream_sync,        // stream
  device_sync,        //
  host_read,          // ranges (in reads)
  host_write,         // ranges (in writes)
  stream_destroy,     // stream (version 2)
  event_destroy,      // event (version 2)
  unmap,              // ptr, size (version 3)
  map,                // ptr, size (version 3)
};

/// The first op log version that has ops of `kind`.
[[nodiscard]] constexpr std::uint64_t first_version_of(op_kind kind) noexcept {
  if (kind == op_kind::unmap || kind == op_kind::map) return 3;
  return kind == op_kind::stream_destroy || kind == op_kind::event_destroy ? 2 : 1;
}

/// The "op" value of a kind: "kernel", "stream_wait_event", ...
[[nodiscard]] std::string_view op_kind_name(op_kind kind) noexcept;

struct oplog_op {
  op_kind kind = op_kind::device_sync;
  std::uint64_t line = 0;  // 1-based line in the file (set by the reader; ignored by the writer)
  std::uint64_t stream = 0;
  std::uint64_t event = 0;
  std::uint64_t ptr = 0;
  std::uint64_t size = 0;
  std::string_view name;  // stream name (stream), op name (kernel, copy); may be empty
  std::string_view loc;   // "file:line", may be empty
  std::span<const byte_range> reads;   // kernel reads, copy src, host_read ranges
  std::span<const byte_range> writes;  // kernel writes, copy dst, host_write ranges
};

}  // namespace streamsafe::hazard
