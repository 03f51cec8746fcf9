// The names of op kinds and hazard kinds as the op log and the reports spell them.
#include "streamsafe/hazard/hazard.hpp"
#include "streamsafe/hazard/oplog_op.hpp"

namespace streamsafe::hazard {

std::string_view op_kind_name(op_kind kind) noexcept {
  switch (kind) {  // no default: the compiler warns when a kind is missing
    case op_kind::stream: return "stream";
    case op_kind::alloc: return "alloc";
    case op_kind::free: return "free";
    case op_kind::record_stream: return "record_stream";
    case op_kind::kernel: return "kernel";
    case op_kind::copy: return "copy";
    case op_kind::event_record: return "event_record";
    case op_kind::stream_wait_event: return "stream_wait_event";
    case op_kind::event_sync: return "event_sync";
    case op_kind::stream_sync: return "stream_sync";
    case op_kind::device_sync: return "device_sync";
    case op_kind::host_read: return "host_read";
    case op_kind::host_write: return "host_write";
    case op_kind::stream_destroy: return "stream_destroy";
    case op_kind::event_destroy: return "event_destroy";
    case op_kind::unmap: return "unmap";
    case op_kind::map: return "map";
  }
  return "?";
}

std::string_view kind_name(hazard_kind kind) noexcept {
  switch (kind) {  // no default: the compiler warns when a kind is missing
    case hazard_kind::race: return "race";
    case hazard_kind::reuse_race: return "reuse_race";
    case hazard_kind::use_after_free: return "use_after_free";
    case hazard_kind::host_race: return "host_race";
    case hazard_kind::wait_unrecorded: return "wait_unrecorded";
    case hazard_kind::redundant_wait: return "redundant_wait";
  }
  return "?";
}

}  // namespace streamsafe::hazard
