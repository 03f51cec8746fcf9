// The op log writer; see oplog_writer.hpp and docs/oplog.md.
#include "streamsafe/hazard/oplog_writer.hpp"

#include <string>

#include "hazard/json_text.hpp"

namespace streamsafe::hazard {

namespace {

void append_field(std::string& line, std::string_view key, std::uint64_t value) {
  line += ",\"";
  line += key;
  line += "\":";
  line += std::to_string(value);
}

void append_text_field(std::string& line, std::string_view key, std::string_view value) {
  if (value.empty()) return;
  line += ",\"";
  line += key;
  line += "\":";
  detail::append_json_string(line, value);
}

void append_range(std::string& line, const byte_range& range) {
  line += '[';
  line += std::to_string(range.first);
  line += ',';
  line += std::to_string(range.size);
  line += ']';
}

void append_ranges(std::string& line, std::string_view key, std::span<const byte_range> ranges) {
  line += ",\"";
  line += key;
  line += "\":[";
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (i > 0) line += ',';
    append_range(line, ranges[i]);
  }
  line += ']';
}

void append_single_range(std::string& line, std::string_view key, std::span<const byte_range> ranges) {
  line += ",\"";
  line += key;
  line += "\":";
  append_range(line, ranges.empty() ? byte_range{} : ranges.front());
}

// The fields of each kind, in the order docs/oplog.md lists them.
void append_fields(std::string& line, const oplog_op& op) {
  switch (op.kind) {  // no default: the compiler warns when a kind is missing
    case op_kind::stream:
      append_field(line, "stream", op.stream);
      append_text_field(line, "name", op.name);
      return;
    case op_kind::alloc:
      append_field(line, "ptr", op.ptr);
      append_field(line, "size", op.size);
      append_field(line, "stream", op.stream);
      return;
    case op_kind::free: append_field(line, "ptr", op.ptr); return;
    case op_kind::record_stream:
      append_field(line, "ptr", op.ptr);
      append_field(line, "stream", op.stream);
      return;
    case op_kind::kernel:
      append_field(line, "stream", op.stream);
      append_text_field(line, "name", op.name);
      append_ranges(line, "reads", op.reads);
      append_ranges(line, "writes", op.writes);
      return;
    case op_kind::copy:
      append_field(line, "stream", op.stream);
      append_text_field(line, "name", op.name);
      append_single_range(line, "src", op.reads);
      append_single_range(line, "dst", op.writes);
      return;
    case op_kind::event_record:
      append_field(line, "event", op.event);
      append_field(line, "stream", op.stream);
      return;
    case op_kind::stream_wait_event:
      append_field(line, "stream", op.stream);
      append_field(line, "event", op.event);
      return;
    case op_kind::event_sync:
    case op_kind::event_destroy: append_field(line, "event", op.event); return;
    case op_kind::stream_sync:
    case op_kind::stream_destroy: append_field(line, "stream", op.stream); return;
    case op_kind::device_sync: return;
    case op_kind::host_read: append_ranges(line, "ranges", op.reads); return;
    case op_kind::host_write: append_ranges(line, "ranges", op.writes); return;
    case op_kind::unmap:
    case op_kind::map:
      append_field(line, "ptr", op.ptr);
      append_field(line, "size", op.size);
      return;
  }
}

}  // namespace

oplog_writer::oplog_writer(std::ostream& out) : out_(&out) {
  *out_ << "{\"streamsafe_oplog\":" << oplog_version << "}\n";
}

void oplog_writer::write(const oplog_op& op) {
  std::string line = "{\"op\":\"";
  line += op_kind_name(op.kind);
  line += '"';
  append_fields(line, op);
  append_text_field(line, "loc", op.loc);
  line += "}\n";
  *out_ << line;
}

}  // namespace streamsafe::hazard
