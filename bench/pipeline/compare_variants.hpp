// The loop variants the comparison benchmark measures, each running the synthetic training step
// of `streamsafe pipeline` (training_pipeline.hpp, the same kernels everywhere): the pipeline,
// and the loops written by hand (hand_loops.hpp). A variant lives for one config; its runs are
// measured in turns with the others' so drift over the run is shared.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hand_loops.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/hazard/tracker.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/monitor/collector.hpp"
#include "streamsafe/pipeline/bound.hpp"
#include "streamsafe/pipeline/pipeline.hpp"
#include "streamsafe/runtime_observer.hpp"
#include "training_pipeline.hpp"

namespace streamsafe::bench {

/// One measured run of `steps` batches.
struct repetition {
  double step_us = 0;       ///< steady step: between the first and the last batch's end, per batch
  double wall_step_us = 0;  ///< host wall time of the whole run (ramp and drain included), per batch
  double h2d_gbps = 0;      ///< batch bytes over the copy engines' busy time per batch
  std::uint64_t loop_allocations = 0;  ///< allocator blocks and device memory calls in the loop
  std::uint64_t loop_frees = 0;
  std::uint64_t loop_host_syncs = 0;   ///< host syncs in the loop other than the blocked waits
  std::uint64_t blocked_waits = 0;     ///< slot fences (pipeline) or loader waits (by hand) that blocked
  float last_loss = 0;
};

/// Counts every synchronize the host makes on the device it is attached to (stream, event and
/// device): the runtime's own count, whoever calls. Thread-safe.
class sync_counter final : public RuntimeObserver {
 public:
  void on_stream_synchronize(StreamRef /*stream*/) override { ++count_; }
  void on_event_synchronize(EventRef /*event*/) override { ++count_; }
  void on_device_synchronize() override { ++count_; }
  [[nodiscard]] std::uint64_t count() const { return count_.load(); }

 private:
  std::atomic<std::uint64_t> count_{0};
};

/// What every variant of one config shares: the device, its allocator, the collector (busy
/// times) and the sync counter.
struct bench_device {
  explicit bench_device(const Device& device);
  ~bench_device();
  bench_device(const bench_device&) = delete;
  bench_device& operator=(const bench_device&) = delete;
  /// The copy engines' busy time so far (us), from the collector.
  [[nodiscard]] double copy_busy_us();

  Device device;
  caching_allocator allocator;
  demo::loop_ops ops{allocator};  // the loops by hand: untracked
  monitor::collector collector;
  std::shared_ptr<sync_counter> syncs = std::make_shared<sync_counter>();
};

class variant {
 public:
  virtual ~variant() = default;
  [[nodiscard]] virtual const std::string& name() const = 0;
  /// Runs `steps` batches and discards the figures.
  virtual void warm_up(std::size_t steps) = 0;
  /// Runs `steps` batches (at least 2) and measures them.
  [[nodiscard]] virtual repetition measure(std::size_t steps) = 0;
};

/// The names measure_all runs, in order: pipeline, one_stream, four_streams, prefetcher.
[[nodiscard]] const std::vector<std::string>& variant_names();

/// Each variant of `config` on `shared` (`depth`: the pipeline's ring, and the loader's slots
/// for the loops by hand).
[[nodiscard]] std::vector<std::unique_ptr<variant>> make_variants(bench_device& shared, const demo::training_config& config,
                                                                  std::size_t depth);

/// The hazards the engine (report mode) finds in each variant of `config` run `steps` batches
/// under it, on a tracked allocator of its own: in variant_names() order. Not informational ones.
[[nodiscard]] std::vector<std::size_t> check_hazards(const Device& device, const demo::training_config& config,
                                                     std::size_t depth, std::size_t steps);

/// The bound of `config`: the pipeline's stages run alone (run_mode::alone, `steps` batches),
/// each stage's time alone from the collector, as `streamsafe pipeline` computes it.
struct config_bound {
  std::vector<pipeline::stage_time> stages;
  pipeline::bound_report bound;  ///< its step_us and efficiency are not set
};
[[nodiscard]] config_bound measure_bound(bench_device& shared, const demo::training_config& config, std::size_t depth,
                                         std::size_t steps);

}  // namespace streamsafe::bench
