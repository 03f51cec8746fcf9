#include "streamsafe/monitor/chrome_trace.hpp"

#include <set>

#include "monitor/json_writer.hpp"

namespace streamsafe::monitor {

namespace {

using detail::json_writer;

std::string_view category_of(op_kind kind) {
  switch (kind) {
    case op_kind::kernel: return "kernel";
    case op_kind::memcpy: return "gpu_memcpy";
    case op_kind::memset: return "gpu_memset";
    case op_kind::sync: return "cuda_sync";
    case op_kind::event_record: return "cuda_event";
  }
  return "kernel";
}

void write_slice(json_writer& w, std::string_view cat, std::string_view name, std::int64_t pid, std::int64_t tid,
                 double ts, double dur) {
  w.field("ph", "X").field("cat", cat).field("name", name).field("pid", pid).field("tid", tid).field("ts", ts).field("dur", dur);
}

void write_op(json_writer& w, const trace& t, const gpu_op& op, std::int64_t waited_record_correlation) {
  w.begin_object();
  write_slice(w, category_of(op.kind), t.name_of(op), op.stream.device, op.stream.stream, op.ts_us, op.dur_us);
  w.key("args").begin_object().field("device", static_cast<std::int64_t>(op.stream.device)).field("stream", op.stream.stream);
  if (op.correlation >= 0) w.field("correlation", op.correlation);
  if (op.bytes > 0) w.field("bytes", op.bytes);
  if (waited_record_correlation >= 0) w.field("wait_on_cuda_event_record_corr_id", waited_record_correlation);
  w.end_object().end_object();
}

void write_metadata(json_writer& w, std::string_view what, std::int64_t pid, std::int64_t tid, std::string_view name) {
  w.begin_object().field("ph", "M").field("name", what).field("pid", pid).field("tid", tid);
  w.key("args").begin_object().field("name", name).end_object().end_object();
}

void write_names(json_writer& w, const trace& t) {
  std::set<std::int32_t> devices;
  std::set<stream_key> streams;
  for (const auto& op : t.ops) {
    devices.insert(op.stream.device);
    streams.insert(op.stream);
  }
  for (auto device : devices) {
    auto it = t.device_names.find(device);
    write_metadata(w, "process_name", device, 0, it != t.device_names.end() ? it->second : "GPU " + std::to_string(device));
  }
  for (const auto& s : streams) {
    auto it = t.stream_names.find(s);
    write_metadata(w, "thread_name", s.device, s.stream, it != t.stream_names.end() ? it->second : "stream " + std::to_string(s.stream));
  }
  write_metadata(w, "process_name", host_pid, 0, "host");
}

void write_flow(json_writer& w, const gpu_op& from, const gpu_op& to, std::size_t id) {
  // Kineto binds a flow start to the enclosing slice and the finish to the next slice ("bp":"e").
  w.begin_object().field("ph", "s").field("cat", "stream_wait").field("name", "stream_wait").field("id", static_cast<std::uint64_t>(id))
      .field("pid", static_cast<std::int64_t>(from.stream.device)).field("tid", from.stream.stream).field("ts", from.ts_us).end_object();
  w.begin_object().field("ph", "f").field("bp", "e").field("cat", "stream_wait").field("name", "stream_wait")
      .field("id", static_cast<std::uint64_t>(id)).field("pid", static_cast<std::int64_t>(to.stream.device))
      .field("tid", to.stream.stream).field("ts", to.ts_us).end_object();
}

}  // namespace

void write_chrome_trace(std::ostream& out, const trace& t, std::span<const idle_gap> gaps) {
  std::vector<std::int64_t> waited(t.ops.size(), -1);
  for (const auto& dep : t.dependencies) waited[dep.wait_op] = t.ops[dep.record_op].correlation;
  json_writer w(out);
  w.begin_object().field("schemaVersion", 1).field("displayTimeUnit", "ms");
  w.key("deviceProperties").begin_array();
  for (const auto& [device, name] : t.device_names) w.begin_object().field("id", static_cast<std::int64_t>(device)).field("name", name).end_object();
  w.end_array();
  w.key("traceEvents").begin_array();
  write_names(w, t);
  for (std::size_t i = 0; i < t.ops.size(); ++i) write_op(w, t, t.ops[i], waited[i]);
  for (const auto& call : t.calls) {
    w.begin_object();
    write_slice(w, "cuda_runtime", t.name_of(call), host_pid, call.thread, call.ts_us, call.dur_us);
    w.key("args").begin_object();
    if (call.correlation >= 0) w.field("correlation", call.correlation);
    w.end_object().end_object();
  }
  for (const auto& range : t.annotations) {
    const bool on_gpu = range.side == annotation_side::gpu;
    w.begin_object();
    write_slice(w, on_gpu ? "gpu_user_annotation" : "user_annotation", t.name_of(range),
                on_gpu ? range.stream.device : host_pid, on_gpu ? range.stream.stream : range.thread, range.ts_us, range.dur_us);
    w.end_object();
  }
  std::size_t flow_id = 1;
  for (const auto& dep : t.dependencies) write_flow(w, t.ops[dep.record_op], t.ops[dep.wait_op], flow_id++);
  for (const auto& gap : gaps) {
    if (gap.cause == gap_cause::event_wait && gap.wait == wait_evidence::inferred && gap.producer_op) {
      write_flow(w, t.ops[*gap.producer_op], t.ops[gap.after_op], flow_id++);
    }
  }
  w.end_array().end_object();
  out << '\n';
}

}  // namespace streamsafe::monitor
