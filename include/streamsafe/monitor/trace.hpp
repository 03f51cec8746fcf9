// The trace model the monitor analyses: what ran on which GPU stream and when, what the host
// called to make it run, and which cross-stream dependencies were declared.
//
// It is filled by a reader (trace_reader.hpp) from a Chrome trace file, ours or PyTorch's
// profiler (Kineto), and later by the CUPTI collector. Times are microseconds on one clock (the
// file's). The model is plain data: analysis lives in usage.hpp, idle_gaps.hpp and friends.
// Thread safety: none needed; a trace is built once and then only read.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace streamsafe::monitor {

/// What a slice on a GPU stream did.
enum class op_kind : std::uint8_t {
  kernel,
  memcpy,
  memset,
  sync,          // a synchronisation record on the stream (e.g. "Stream Wait Event")
  event_record,  // an event recorded on the stream
};

/// Host memory kind of one side of a copy, as Kineto names it ("Pageable", "Pinned", ...).
enum class memory_kind : std::uint8_t { unknown, pageable, pinned, device, managed, array };

/// A GPU stream: the device and the stream id the trace gives it (CUDA's legacy default stream is 7
/// in CUPTI's numbering).
struct stream_key {
  std::int32_t device = 0;
  std::int64_t stream = 0;
  friend auto operator<=>(const stream_key&, const stream_key&) = default;
};

/// CUPTI's id for the legacy default stream, which implicitly synchronises with other streams.
inline constexpr std::int64_t legacy_default_stream = 7;

/// Index of an interned string in trace::names.
using name_id = std::uint32_t;

/// One operation on a GPU stream. `correlation` links it to the host call that launched it.
struct gpu_op {
  stream_key stream;
  op_kind kind = op_kind::kernel;
  double ts_us = 0;
  double dur_us = 0;
  name_id name = 0;
  std::int64_t correlation = -1;  // -1: unknown
  std::uint64_t bytes = 0;        // memcpy / memset only
  memory_kind src = memory_kind::unknown;
  memory_kind dst = memory_kind::unknown;
  [[nodiscard]] double end_us() const { return ts_us + dur_us; }
};

/// What a host-side CUDA runtime or driver call was, as far as the analysis cares.
enum class call_kind : std::uint8_t {
  launch,
  memcpy,
  memset,
  event_create,
  event_record,
  event_elapsed_time,
  stream_wait_event,
  event_sync,
  stream_sync,
  device_sync,
  other,
};

/// One host-side runtime/driver call (Kineto category cuda_runtime / cuda_driver).
struct runtime_call {
  std::int64_t thread = 0;
  call_kind kind = call_kind::other;
  double ts_us = 0;
  double dur_us = 0;
  name_id name = 0;
  std::int64_t correlation = -1;
  [[nodiscard]] double end_us() const { return ts_us + dur_us; }
};

/// A declared cross-stream dependency: the event recorded by `record_op` was waited for by
/// `wait_op` (both indices into trace::ops, kinds event_record and sync).
struct dependency {
  std::size_t record_op = 0;
  std::size_t wait_op = 0;
};

/// Where an annotation (NVTX range, record_function, ProfilerStep#N) was observed.
enum class annotation_side : std::uint8_t { host, gpu };

/// A user range; the iteration finder (iterations.hpp) uses them as markers.
struct annotation {
  annotation_side side = annotation_side::host;
  stream_key stream;       // gpu side only
  std::int64_t thread = 0;  // host side only
  name_id name = 0;
  double ts_us = 0;
  double dur_us = 0;
  [[nodiscard]] double end_us() const { return ts_us + dur_us; }
};

/// Interns names so ops carry a 4-byte id instead of a string.
class string_table {
 public:
  string_table() { intern(""); }
  name_id intern(std::string_view text);
  /// Valid until the next intern().
  [[nodiscard]] std::string_view view(name_id id) const { return strings_[id]; }
  [[nodiscard]] std::size_t size() const { return strings_.size(); }

 private:
  // Two copies of each name keep the table copyable without pointer fix-ups; names are few.
  std::vector<std::string> strings_;
  std::unordered_map<std::string, name_id> ids_;
};

struct trace {
  std::string source;  // file name, for messages
  /// Every ts_us is microseconds after this instant, in the writer's clock (nanoseconds; a
  /// reader sets it to the first timed event's time, so that nanosecond digits on epoch
  /// timestamps survive the conversion to double). Unset: ts_us are the writer's own.
  std::optional<std::int64_t> origin_ns;
  string_table names;
  std::vector<gpu_op> ops;  // sorted by ts_us once a reader returns
  std::vector<runtime_call> calls;  // sorted by ts_us once a reader returns
  std::vector<dependency> dependencies;
  std::vector<annotation> annotations;  // sorted by ts_us once a reader returns
  std::map<stream_key, std::string> stream_names;
  std::map<std::int32_t, std::string> device_names;

  [[nodiscard]] std::string_view name_of(const gpu_op& op) const { return names.view(op.name); }
  [[nodiscard]] std::string_view name_of(const runtime_call& call) const { return names.view(call.name); }
  [[nodiscard]] std::string_view name_of(const annotation& range) const { return names.view(range.name); }
};

/// Classifies a runtime/driver API name ("cudaLaunchKernel", "cuLaunchKernel", ...).
[[nodiscard]] call_kind classify_call(std::string_view api_name);

/// Sorts ops, calls and annotations by time and remaps dependencies; readers call it last.
void sort_by_time(trace& t);

[[nodiscard]] std::string_view to_string(op_kind kind);
[[nodiscard]] std::string_view to_string(memory_kind kind);

}  // namespace streamsafe::monitor
