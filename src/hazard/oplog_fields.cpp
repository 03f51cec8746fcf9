#include "hazard/oplog_fields.hpp"

namespace streamsafe::hazard::detail {

std::string_view field_key(field f) noexcept {
  switch (f) {  // no default: the compiler warns when a field is missing
    case field::op: return "op";
    case field::stream: return "stream";
    case field::event: return "event";
    case field::ptr: return "ptr";
    case field::size: return "size";
    case field::name: return "name";
    case field::loc: return "loc";
    case field::reads: return "reads";
    case field::writes: return "writes";
    case field::src: return "src";
    case field::dst: return "dst";
    case field::ranges: return "ranges";
  }
  return "?";
}

std::optional<field> field_of_key(std::string_view key) noexcept {
  for (const field f : all_fields) {
    if (field_key(f) == key) return f;
  }
  return std::nullopt;
}

std::optional<op_kind> op_kind_of(std::string_view name) noexcept {
  constexpr std::array kinds{op_kind::stream,       op_kind::alloc,      op_kind::free,
                             op_kind::record_stream, op_kind::kernel,     op_kind::copy,
                             op_kind::event_record,  op_kind::stream_wait_event, op_kind::event_sync,
                             op_kind::stream_sync,   op_kind::device_sync, op_kind::host_read,
                             op_kind::host_write,    op_kind::stream_destroy, op_kind::event_destroy,
                             op_kind::unmap,         op_kind::map};
  for (const op_kind kind : kinds) {
    if (op_kind_name(kind) == name) return kind;
  }
  return std::nullopt;
}

field_set required_fields(op_kind kind) noexcept {
  switch (kind) {  // no default: the compiler warns when a kind is missing
    case op_kind::stream: return {field::stream};
    case op_kind::alloc: return {field::ptr, field::size, field::stream};
    case op_kind::free: return {field::ptr};
    case op_kind::record_stream: return {field::ptr, field::stream};
    case op_kind::kernel: return {field::stream};
    case op_kind::copy: return {field::stream, field::src, field::dst};
    case op_kind::event_record: return {field::event, field::stream};
    case op_kind::stream_wait_event: return {field::stream, field::event};
    case op_kind::event_sync: return {field::event};
    case op_kind::stream_sync: return {field::stream};
    case op_kind::device_sync: return {};
    case op_kind::host_read: return {field::ranges};
    case op_kind::host_write: return {field::ranges};
    case op_kind::stream_destroy: return {field::stream};
    case op_kind::event_destroy: return {field::event};
    case op_kind::unmap:
    case op_kind::map: return {field::ptr, field::size};
  }
  return {};
}

}  // namespace streamsafe::hazard::detail
