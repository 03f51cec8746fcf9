// Feeding an op log to the engine (`streamsafe check`): each line maps to one engine call.
#include "streamsafe/hazard/oplog_check.hpp"

#include "streamsafe/error.hpp"
#include "streamsafe/hazard/oplog_reader.hpp"

namespace streamsafe::hazard {

namespace {

// The op name a report shows for an op that has no "name".
std::string_view default_op_name(const oplog_op& op) {
  return op.name.empty() ? op_kind_name(op.kind) : op.name;
}

void apply_unchecked(engine& model, const oplog_op& op) {
  const op_site site{model.label(default_op_name(op), op.loc), op.line};
  const stream_id stream{op.stream};
  const event_id event{op.event};
  const std::span<const byte_range> none;
  switch (op.kind) {  // no default: the compiler warns when a kind is missing
    case op_kind::stream: model.name_stream(stream, op.name); return;
    case op_kind::alloc: model.alloc(op.ptr, op.size, stream, site); return;
    case op_kind::free: (void)model.free(op.ptr, site); return;
    case op_kind::record_stream: model.record_stream(op.ptr, stream, site); return;
    case op_kind::kernel:
    case op_kind::copy: (void)model.access(stream, op.reads, op.writes, site); return;
    case op_kind::event_record: model.event_record(event, stream, site); return;
    case op_kind::stream_wait_event: model.stream_wait_event(stream, event, site); return;
    case op_kind::event_sync: model.event_sync(event, site); return;
    case op_kind::stream_sync: model.stream_sync(stream, site); return;
    case op_kind::device_sync: model.device_sync(site); return;
    case op_kind::host_read: (void)model.host_access(op.reads, none, site); return;
    case op_kind::host_write: (void)model.host_access(none, op.writes, site); return;
    case op_kind::stream_destroy: model.stream_destroy(stream, site); return;
    case op_kind::event_destroy: model.event_destroy(event, site); return;
    case op_kind::unmap: model.unmap(op.ptr, op.size, site); return;
    case op_kind::map: model.map(op.ptr, op.size, site); return;
  }
}

constexpr std::uint64_t progress_every_ops = 1U << 16;

}  // namespace

void apply(engine& model, const oplog_op& op) {
  try {
    apply_unchecked(model, op);
  } catch (const usage_error& e) {
    throw parse_error("line " + std::to_string(op.line) + ": " + e.what(), op.line);
  }
}

check_summary check_oplog(std::istream& in, const check_options& options) {
  check_summary summary;
  engine model(options.mode);
  model.on_hazard([&](const hazard& found) {
    ++(is_informational(found.kind) ? summary.informational : summary.hazards);
    options.on_hazard(found);
  });
  oplog_reader reader(in);
  while (auto op = reader.next()) {
    apply(model, *op);
    if (++summary.ops % progress_every_ops == 0 && options.on_progress) options.on_progress(reader.bytes_read());
  }
  summary.inserted = model.inserted();
  return summary;
}

}  // namespace streamsafe::hazard
