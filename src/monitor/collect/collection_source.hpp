// Where a collector's records come from: the sim device's op-timing hook or CUPTI. A source
// pushes records into a record_sink (the collector) from whatever thread it runs on.
// Internal to the collector.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "monitor/collect/diagnostic_settings.hpp"
#include "monitor/collect/op_record.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/monitor/collector.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::monitor::detail {

/// Receives records; thread-safe, and never throws into the source.
class record_sink {
 public:
  virtual ~record_sink() = default;
  virtual void on_ops(std::span<const op_record> ops) noexcept = 0;
  virtual void on_call(std::int64_t thread, call_kind kind, std::string_view name, double ts_us, double dur_us,
                       std::int64_t correlation) noexcept = 0;
  virtual void on_annotation(const annotation& range, std::string_view name) noexcept = 0;
};

/// How much a source records. Device ops alone are what the always-on figures need; host calls,
/// synchronization and event records (much dearer to collect through CUPTI, which must hook
/// every runtime call) only matter inside a traced window.
enum class trace_detail { device_ops, full };

/// Who reports the host's runtime calls: the source itself (CUPTI's runtime records) or the
/// collector, from streamsafe's observer callbacks (sim, where there is no CUDA runtime).
enum class host_call_origin { source, observer };

class collection_source {
 public:
  virtual ~collection_source() = default;
  /// The key the source's records use for `stream`.
  [[nodiscard]] virtual stream_key key_of(StreamRef stream) = 0;
  /// Delivers every record of completed work to the sink; call without the collector's lock
  /// (CUPTI delivers on the calling thread).
  virtual void flush() = 0;
  [[nodiscard]] virtual host_call_origin host_calls() const = 0;
  /// Switches what is recorded from now on; a source starts with device_ops.
  virtual void set_detail(trace_detail detail) = 0;
  /// Switches collection of device ops on or off for the work enqueued from now on (work
  /// enqueued before still reports); a source starts collecting. Sampled always-on mode.
  virtual void set_collecting(bool on) = 0;
  [[nodiscard]] virtual std::string description() const = 0;
};

/// A source, or why there is none (another collector or CUPTI client is attached, ...).
struct opened_source {
  std::unique_ptr<collection_source> source;
  std::string refusal;
};

/// The message an inactive collector gives: what failed, why, and what to do.
[[nodiscard]] std::string backoff_message(std::string_view device_name, std::string_view reason);

[[nodiscard]] opened_source open_sim_source(const Device& device, std::weak_ptr<record_sink> sink);
/// Defined in cupti_source.cpp with the cuda backend, in no_cupti.cpp without it.
[[nodiscard]] opened_source open_cupti_source(const Device& device, std::weak_ptr<record_sink> sink,
                                              const collector_options& options, const diagnostic_settings& settings);

}  // namespace streamsafe::monitor::detail
