// Live collection: a collector attached to a Device turns what runs on its streams into the
// monitor's trace model (trace.hpp), so the analysis and every output work on a live run.
//
//  - cuda: CUPTI's activity API (concurrent kernels, memcpy, memset, synchronization, CUDA
//    events, runtime calls, NVTX markers), with GPU times moved onto the host's steady clock.
//  - sim:  the sim device reports when each kernel, copy and fill ran.
//  - both: streamsafe's own event records and stream waits become dependency edges, and stream
//    names come from the runtime.
//
// Two levels of cost (docs/monitor.md, "Live collection"):
//  - always on: every op is reduced online into usage figures (busy time as a union of
//    intervals, counts, overlap) and then dropped; usage() reads them. Sampled always-on collects
//    only a window of wall time in every period (collector_options::sample_period, no step hook
//    needed) or one window of steps in N (sample_every_steps, the steps being marked by step()).
//    collector_options::always_on = always_on_ops::kernels leaves copies and fills out.
//  - full tracing: between start_tracing() and stop_tracing() (or inside capture_window) every
//    op is also kept, and stop_tracing() returns the window as a trace.
//
// Only one collector per device (and, on cuda, one CUPTI client per process): a collector that
// cannot attach does not throw; it is inactive, says why in status_message(), and its queries
// return empty results. Thread safety: all members may be called from any thread.
#pragma once

#include <chrono>
#include <concepts>
#include <cstddef>
#include <memory>
#include <string>

#include "streamsafe/device.hpp"
#include "streamsafe/monitor/trace.hpp"
#include "streamsafe/monitor/usage.hpp"

namespace streamsafe::monitor {

namespace detail {
class collector_state;
}

/// Whether full tracing starts with the collector or waits for start_tracing().
enum class initial_tracing { off, on };

/// Which device ops always-on collection records (traced windows record every kind).
///  - all: kernels, copies and fills: the full usage figures.
///  - kernels: kernels only, a production choice where copies make always-on too dear (on cuda,
///    CUPTI's MEMCPY records are most of its always-on cost: docs/monitor.md, "Cost by kind").
///    The trade-off: usage() has no copy or fill busy time (copy_us, the copy overlaps, memcpys
///    and memsets are 0; a stream that only copies does not appear), and busy/idle count
///    kernels only.
enum class always_on_ops { all, kernels };

struct collector_options {
  initial_tracing tracing = initial_tracing::off;
  /// cuda: size and number of CUPTI activity buffers allocated ahead (more are allocated if
  /// CUPTI asks for more before the collector has parsed the full ones).
  std::size_t cupti_buffer_bytes = std::size_t{4} << 20;
  std::size_t cupti_buffers = 4;
  /// Always-on reduction works in batches of this many ops (sorted by start time first): the
  /// memory bound of always-on mode. See docs/monitor.md for the effect on exactness.
  std::size_t reduce_batch_ops = 16384;
  /// Sampled always-on, for when collecting every op costs too much: with N > 1, device ops are
  /// collected only during the first sample_window_steps steps of every N (steps end at each
  /// step() call; step 0 begins with the collector), and nothing is collected in the others (on
  /// cuda the CUPTI device kinds are disabled there). usage() then covers the sampled steps only
  /// and says so in usage_report::sampled_fraction. Traced windows are always collected in full
  /// (their steps count as sampled). 0 or 1: every step (no sampling).
  std::size_t sample_every_steps = 0;
  std::size_t sample_window_steps = 1;
  /// Time-sampled always-on, needing no step() calls: with 0 < sample_window < sample_period,
  /// device ops are collected only while the wall time since the collector started, modulo
  /// sample_period, is below sample_window (each period opens with a window). Windows open and
  /// close on the collector's own callbacks (streamsafe's launch, copy, fill, record, wait and
  /// synchronize calls on the device, and step(), usage(), start/stop_tracing()): no thread, one
  /// clock read and one compare per callback; the switch applies from the next enqueued op. Ops
  /// enqueued outside streamsafe (raw CUDA on cuda) are collected while the last switch left
  /// collection on. usage_report::sampled_fraction is the fraction of wall time in windows
  /// (traced time counts in full). Takes precedence over sample_every_steps. 0: off.
  std::chrono::nanoseconds sample_period{0};
  std::chrono::nanoseconds sample_window{0};
  /// See always_on_ops.
  always_on_ops always_on = always_on_ops::all;
};

enum class collector_status { active, inactive };

class collector {
 public:
  explicit collector(const Device& device, const collector_options& options = {});
  /// Stops collection and detaches from the device.
  ~collector();
  collector(const collector&) = delete;
  collector& operator=(const collector&) = delete;

  [[nodiscard]] collector_status status() const;
  /// Why the collector is inactive ("another CUPTI client is attached (Nsight Systems?)..."),
  /// or a one-line description of what it collects.
  [[nodiscard]] std::string status_message() const;

  /// Ends one step (iteration) of the program and begins the next: call it once per step, after
  /// enqueuing the step's work, on one thread. Only step-sampled always-on needs it (it switches
  /// collection on and off at window boundaries); otherwise it only counts.
  void step();

  /// Starts keeping every op, call, annotation and dependency (no-op when already tracing).
  void start_tracing();
  /// Flushes pending records and returns what was kept since start_tracing(), with stream
  /// names. Call after synchronizing the work you want in it: ops still running are missing.
  [[nodiscard]] trace stop_tracing();
  /// Full tracing around `work()`; synchronizes the device before stopping.
  template <std::invocable Work>
  [[nodiscard]] trace capture_window(Work&& work) {
    start_tracing();
    std::forward<Work>(work)();
    synchronize_device();
    return stop_tracing();
  }

  /// The always-on figures since the collector started (flushes pending records first).
  /// queue depth is not tracked always-on (0); everything else matches measure_usage() over a
  /// full trace of the same run (see docs/monitor.md for the batch boundary caveat). Sampled:
  /// the figures of the sampled steps, with sampled_fraction < 1 once an unsampled step ended;
  /// time-sampled: of the sampled windows, with sampled_fraction the fraction of time in them.
  [[nodiscard]] usage_report usage();
  /// Ops reduced so far by always-on mode (sampled: of the sampled steps).
  [[nodiscard]] std::size_t ops_seen() const;

 private:
  void synchronize_device();
  Device device_;
  std::shared_ptr<detail::collector_state> state_;
};

}  // namespace streamsafe::monitor
