// The engine's recorder: builds the op log line for each engine call and hands it to the writer
// when one is attached. Only the engine uses this.
#pragma once

#include <span>
#include <string_view>

#include "streamsafe/hazard/oplog_op.hpp"
#include "streamsafe/hazard/oplog_writer.hpp"

namespace streamsafe::hazard::detail {

inline void record_op(oplog_writer* recorder, const oplog_op& op) {
  if (recorder != nullptr) recorder->write(op);
}

[[nodiscard]] inline std::uint64_t raw(stream_id id) noexcept { return static_cast<std::uint64_t>(id); }
[[nodiscard]] inline std::uint64_t raw(event_id id) noexcept { return static_cast<std::uint64_t>(id); }

[[nodiscard]] inline oplog_op stream_op(stream_id stream, std::string_view name) {
  oplog_op op;
  op.kind = op_kind::stream; op.stream = raw(stream); op.name = name;
  return op;
}
[[nodiscard]] inline oplog_op alloc_op(std::uint64_t ptr, std::uint64_t size, stream_id stream, std::string_view loc) {
  oplog_op op;
  op.kind = op_kind::alloc; op.stream = raw(stream); op.ptr = ptr; op.size = size; op.loc = loc;
  return op;
}
[[nodiscard]] inline oplog_op free_op(std::uint64_t ptr, std::string_view loc) {
  oplog_op op;
  op.kind = op_kind::free; op.ptr = ptr; op.loc = loc;
  return op;
}
/// An op that names one range by ptr and size (unmap, map).
[[nodiscard]] inline oplog_op range_op(op_kind kind, std::uint64_t ptr, std::uint64_t size, std::string_view loc) {
  oplog_op op;
  op.kind = kind; op.ptr = ptr; op.size = size; op.loc = loc;
  return op;
}
[[nodiscard]] inline oplog_op record_stream_op(std::uint64_t ptr, stream_id stream, std::string_view loc) {
  oplog_op op;
  op.kind = op_kind::record_stream; op.stream = raw(stream); op.ptr = ptr; op.loc = loc;
  return op;
}
[[nodiscard]] inline oplog_op kernel_op(stream_id stream, std::string_view name, std::span<const byte_range> reads,
                                        std::span<const byte_range> writes, std::string_view loc) {
  oplog_op op;
  op.kind = op_kind::kernel; op.stream = raw(stream); op.name = name; op.loc = loc; op.reads = reads; op.writes = writes;
  return op;
}
[[nodiscard]] inline oplog_op event_record_op(event_id event, stream_id stream, std::string_view loc) {
  oplog_op op;
  op.kind = op_kind::event_record; op.stream = raw(stream); op.event = raw(event); op.loc = loc;
  return op;
}
[[nodiscard]] inline oplog_op stream_wait_event_op(stream_id stream, event_id event, std::string_view loc) {
  oplog_op op;
  op.kind = op_kind::stream_wait_event; op.stream = raw(stream); op.event = raw(event); op.loc = loc;
  return op;
}
/// An op that names one stream and nothing else (stream_sync, stream_destroy).
[[nodiscard]] inline oplog_op stream_only_op(op_kind kind, stream_id stream, std::string_view loc) {
  oplog_op op;
  op.kind = kind; op.stream = raw(stream); op.loc = loc;
  return op;
}
/// An op that names one event and nothing else (event_sync, event_destroy).
[[nodiscard]] inline oplog_op event_only_op(op_kind kind, event_id event, std::string_view loc) {
  oplog_op op;
  op.kind = kind; op.event = raw(event); op.loc = loc;
  return op;
}
[[nodiscard]] inline oplog_op device_sync_op(std::string_view loc) {
  oplog_op op;
  op.kind = op_kind::device_sync; op.loc = loc;
  return op;
}

[[nodiscard]] inline oplog_op host_op(op_kind kind, std::string_view loc, std::span<const byte_range> reads,
                                      std::span<const byte_range> writes) {
  oplog_op op;
  op.kind = kind; op.loc = loc; op.reads = reads; op.writes = writes;
  return op;
}

/// A host access is one host_read and/or one host_write line.
inline void record_host_access(oplog_writer* recorder, std::span<const byte_range> reads,
                               std::span<const byte_range> writes, std::string_view loc) {
  if (!reads.empty()) record_op(recorder, host_op(op_kind::host_read, loc, reads, {}));
  if (!writes.empty()) record_op(recorder, host_op(op_kind::host_write, loc, {}, writes));
}

}  // namespace streamsafe::hazard::detail
