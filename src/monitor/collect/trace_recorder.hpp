// The full-tracing half of the collector: keeps every op, host call and annotation of a window,
// and the event records and stream waits streamsafe's observer reported, which become
// event_record / sync ops joined by dependency edges when the window is turned into a trace.
// Thread safety: none; the collector holds its lock around every call.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "monitor/collect/op_record.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/monitor/trace.hpp"

namespace streamsafe::monitor::detail {

class trace_recorder {
 public:
  explicit trace_recorder(std::string source) { trace_.source = std::move(source); }

  void add_op(const op_record& op);
  void add_call(std::int64_t thread, call_kind kind, std::string_view name, double ts_us, double dur_us,
                std::int64_t correlation = -1);
  void add_annotation(const annotation& range, std::string_view name);
  /// `event` was recorded on `stream` by a host call that returned at `host_us`.
  void note_record(event_id event, stream_key stream, double host_us);
  /// `waiter` was made to wait on `event` by a host call that returned at `host_us`. A wait on
  /// an event not recorded in this window gets no edge.
  void note_wait(stream_key waiter, event_id event, double host_us);

  /// The window as a trace, sorted, with `names` as its stream names.
  [[nodiscard]] trace finish(const std::map<stream_key, std::string>& names, std::string device_name,
                             std::int32_t device) &&;

 private:
  struct marker {
    stream_key stream;
    double host_us = 0;
  };
  struct wait_marker {
    marker at;
    std::size_t record = 0;  // index into records_
  };
  /// When the GPU reached a marker: not before the host call, nor before the work enqueued
  /// ahead of it on its stream ended.
  /// Per stream, (enqueue time, latest end of the ops enqueued by then), by enqueue time.
  using stream_progress = std::map<stream_key, std::vector<std::pair<double, double>>>;
  [[nodiscard]] stream_progress index_progress() const;
  void resolve_enqueue_times();
  [[nodiscard]] static double reached_at(const marker& m, const stream_progress& progress);
  void materialize_dependencies();

  trace trace_;
  std::vector<double> enqueued_;  // parallel to trace_.ops' work ops: host time of the launch, < 0 unknown
  std::vector<marker> records_;
  std::vector<wait_marker> waits_;
  std::map<event_id, std::size_t> last_record_;  // event -> its latest record in records_
};

}  // namespace streamsafe::monitor::detail
