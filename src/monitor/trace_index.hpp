// Look-ups that several analyses need and the trace model does not store: the work ops of each
// stream in time order, and the host call that launched each op. Internal to the monitor.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "streamsafe/monitor/trace.hpp"

namespace streamsafe::monitor::detail {

/// correlation id -> the host call that launched the op. Built once per trace: analyses of many
/// selections (iterations) share it.
class launch_lookup {
 public:
  explicit launch_lookup(const trace& t);
  [[nodiscard]] const runtime_call* launch_of(const gpu_op& op) const;

 private:
  const trace* trace_;
  std::unordered_map<std::int64_t, std::size_t> call_by_correlation_;
};

class trace_index {
 public:
  explicit trace_index(const trace& t);
  trace_index(const trace& t, std::span<const std::size_t> op_indices, const launch_lookup& launches);

  /// Work ops (kernel, memcpy, memset) per stream, sorted by start time.
  [[nodiscard]] const std::map<stream_key, std::vector<std::size_t>>& work_by_stream() const { return by_stream_; }
  /// The runtime call with the op's correlation id, when the trace has one.
  [[nodiscard]] const runtime_call* launch_of(const gpu_op& op) const { return launches_->launch_of(op); }

 private:
  void add(std::size_t op_index);
  void sort_streams();

  const trace* trace_;
  std::map<stream_key, std::vector<std::size_t>> by_stream_;
  std::optional<launch_lookup> own_launches_;  // when not shared
  const launch_lookup* launches_;
};

}  // namespace streamsafe::monitor::detail
