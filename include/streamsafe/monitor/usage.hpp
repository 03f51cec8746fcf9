// How busy each GPU stream and device was: busy time (the union of the intervals of kernels,
// memcpys and memsets; sync and event-record slices do not count), idle time inside the device's
// active window, overlap between copy, compute and communication work and between stream pairs,
// how many streams were ever busy at once, and queue depth (ops launched but not finished).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "streamsafe/monitor/trace.hpp"

namespace streamsafe::monitor {

/// The engine a GPU op occupies, for overlap figures. Kernels whose name contains "nccl" are
/// communication; memcpy and memset are copy; sync and event-record slices occupy nothing.
enum class engine_class : std::uint8_t { compute, copy, communication, none };

[[nodiscard]] engine_class classify_engine(const trace& t, const gpu_op& op);
[[nodiscard]] bool is_work(op_kind kind);  // kernel, memcpy or memset

struct stream_usage {
  stream_key stream;
  std::string name;            // from the trace's metadata, may be empty
  double busy_us = 0;          // union of this stream's work intervals
  double idle_us = 0;          // device window minus busy_us
  std::size_t kernels = 0;
  std::size_t memcpys = 0;
  std::size_t memsets = 0;
  double first_us = 0;         // start of its first work op
  double last_us = 0;          // end of its last work op
  std::size_t max_queue_depth = 0;  // most ops launched (host call ended) and not yet finished
  double mean_queue_depth = 0;      // time-weighted over the device window
};

struct stream_pair_overlap {
  stream_key a;
  stream_key b;
  double overlap_us = 0;  // time both streams were busy
};

struct device_usage {
  std::int32_t device = 0;
  double window_begin_us = 0;  // first work op start
  double window_end_us = 0;    // last work op end
  double busy_us = 0;          // union over all streams
  double idle_us = 0;          // window minus busy
  double compute_us = 0;       // union of compute kernels
  double copy_us = 0;          // union of memcpy and memset
  double communication_us = 0;  // union of communication kernels
  double copy_compute_overlap_us = 0;
  double compute_communication_overlap_us = 0;
  double copy_communication_overlap_us = 0;
  std::size_t streams = 0;                 // streams with work
  std::size_t max_concurrent_streams = 0;  // most streams busy at one instant
  std::vector<stream_pair_overlap> stream_pairs;
  [[nodiscard]] double window_us() const { return window_end_us - window_begin_us; }
};

struct usage_report {
  std::vector<device_usage> devices;  // by device id
  std::vector<stream_usage> streams;  // by (device, stream)
  /// 1 unless the report is a sampling collector's: then the fraction of its steps whose ops
  /// were collected (collector_options::sample_every_steps) or of the wall time inside sampled
  /// windows (sample_period), and every figure covers those windows only: counts and busy times
  /// are the sampled windows', and idle_us counts only the time inside them (busy_us + idle_us,
  /// not window_us(), is the time measured).
  double sampled_fraction = 1;
};

/// Usage over every op of the trace.
[[nodiscard]] usage_report measure_usage(const trace& t);

/// Usage over the selected ops only (indices into t.ops), e.g. one iteration's.
[[nodiscard]] usage_report measure_usage(const trace& t, std::span<const std::size_t> op_indices);

/// measure_usage over each selection (e.g. every iteration); cheaper than calling it in a loop.
[[nodiscard]] std::vector<usage_report> measure_usage_each(const trace& t,
                                                           std::span<const std::vector<std::size_t>> selections);

}  // namespace streamsafe::monitor
