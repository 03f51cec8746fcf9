// The always-on half of the collector: GPU work ops reduced into the figures of usage.hpp
// without keeping them. Ops are buffered up to a batch, sorted by start, and swept once: per
// stream, per engine class and per device only the end of the coverage so far is kept, so a new
// interval's uncovered part and its overlap with every other stream come from a few compares.
// Exact when every op of a batch starts after the ops of earlier batches; an op that arrives
// after its batch was reduced is counted from the batch's last start on (docs/monitor.md).
// Sampled collection: ops come in windows (open_window); idle time is counted inside each
// window's span (first op start to last op end) only, never between windows.
// Thread safety: none; the collector holds its lock around every call.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "monitor/collect/op_record.hpp"
#include "streamsafe/monitor/usage.hpp"

namespace streamsafe::monitor::detail {

class online_usage {
 public:
  explicit online_usage(std::size_t batch_ops) : batch_ops_(batch_ops == 0 ? 1 : batch_ops) {}

  /// Counts `op` (work kinds only: kernel, memcpy, memset; others are ignored).
  void add(const op_record& op);
  /// Sampled collection: ops starting at or after `host_us` belong to a new window (call in
  /// increasing time order). Without any call all ops form one window.
  void open_window(double host_us);
  /// Reduces the buffered ops.
  void reduce();
  /// The figures so far (call reduce() first to include buffered ops). Streams are named
  /// from `names` where they appear in it.
  [[nodiscard]] usage_report report(const std::map<stream_key, std::string>& names) const;
  [[nodiscard]] std::size_t ops_seen() const { return ops_seen_; }

 private:
  struct pending_op {
    stream_key stream;
    op_kind kind;
    engine_class engine;
    double begin;
    double end;
  };
  /// Coverage of one set of intervals reduced so far: its total and where it ends.
  struct coverage {
    double covered_until = 0;
    double total = 0;
    bool started = false;
    /// Adds [begin, end) (begin at or after every earlier begin); returns the newly covered part.
    std::pair<double, double> extend(double begin, double end);
  };
  struct stream_state {
    coverage busy;
    std::size_t kernels = 0, memcpys = 0, memsets = 0;
    double first = 0, last = 0;
  };
  /// The spans of the sampling windows a device's ops fell in, in sweep (start) order.
  struct window_spans {
    std::size_t window = 0;  // index of the window in progress
    double first = 0, last = 0;
    double closed_us = 0;  // total span of the windows before it
    /// Adds [begin, end) of window `index` (begins come in increasing order).
    void add(std::size_t index, double begin, double end, bool first_op);
    [[nodiscard]] double total_us() const { return closed_us + (last - first); }
  };
  struct device_state {
    coverage busy;
    window_spans spans;
    coverage compute, copy, communication;
    double copy_compute = 0, compute_communication = 0, copy_communication = 0;
    double window_begin = 0, window_end = 0;
    std::size_t max_concurrent = 0;
    std::map<stream_key, stream_state> streams;
    std::map<std::pair<stream_key, stream_key>, double> pair_overlap;
  };

  void sweep(const pending_op& op);
  void add_engine_overlap(device_state& d, engine_class engine, std::pair<double, double> fresh, double begin);
  [[nodiscard]] static double overlap(std::pair<double, double> fresh, double begin, const coverage& other);
  [[nodiscard]] device_usage device_report(std::int32_t id, const device_state& d) const;

  [[nodiscard]] engine_class engine_of(const op_record& op);
  [[nodiscard]] std::size_t window_of(double begin) const;

  trace names_;  // only its string table: classify_engine() reads kernel names from it
  std::size_t batch_ops_;
  std::size_t ops_seen_ = 0;
  std::vector<pending_op> pending_;
  double sweep_point_ = 0;
  bool swept_any_ = false;
  std::map<std::int32_t, device_state> devices_;
  std::vector<double> window_starts_;  // host times of open_window(): 8 bytes per sampled window
};

}  // namespace streamsafe::monitor::detail
