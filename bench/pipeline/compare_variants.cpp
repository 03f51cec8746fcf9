#include "compare_variants.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "streamsafe/error.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/hazard/hazard.hpp"
#include "streamsafe/hazard/tracked_allocator.hpp"

namespace streamsafe::bench {

namespace {

using clock_type = std::chrono::steady_clock;

double us_between(clock_type::time_point from, clock_type::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

/// Batch bytes over the copy engines' busy time per batch; 0 when nothing was seen.
double gbps(std::size_t batch_bytes, std::size_t steps, double copy_us) {
  return copy_us > 0 ? static_cast<double>(batch_bytes) * static_cast<double>(steps) / (copy_us * 1e3) : 0;
}

class pipeline_variant final : public variant {
 public:
  pipeline_variant(bench_device& shared, const demo::training_config& config, std::size_t depth)
      : shared_(shared), training_(config, shared.device.backend()),
        pipeline_(shared.device, shared.allocator, training_.spec(depth)) {}
  [[nodiscard]] const std::string& name() const override { return variant_names()[0]; }
  void warm_up(std::size_t steps) override { (void)pipeline_.run(steps); }

  [[nodiscard]] repetition measure(std::size_t steps) override {
    const double copy_before = shared_.copy_busy_us();
    const pipeline::run_stats stats = pipeline_.run(steps);
    return {.step_us = stats.step_us,
            .wall_step_us = stats.loop_us / static_cast<double>(steps),
            .h2d_gbps = gbps(training_.config().batch_bytes(), steps, shared_.copy_busy_us() - copy_before),
            .loop_allocations = stats.loop_allocations,
            .loop_frees = stats.loop_frees,
            .loop_host_syncs = stats.loop_host_syncs,
            .blocked_waits = stats.fence_waits_blocked,
            .last_loss = training_.last_loss()};
  }

 private:
  bench_device& shared_;
  demo::training_step training_;
  pipeline::pipeline pipeline_;
};

class hand_variant final : public variant {
 public:
  hand_variant(const std::string& name, bench_device& shared, std::unique_ptr<demo::hand_loop> loop, std::size_t batch_bytes)
      : name_(name), shared_(shared), loop_(std::move(loop)), batch_bytes_(batch_bytes) {}
  [[nodiscard]] const std::string& name() const override { return name_; }

  void warm_up(std::size_t steps) override {
    for (std::size_t i = 0; i < steps; ++i) loop_->step(next_batch_++);
    loop_->tail().synchronize();
  }

  // The steady step from timing events on the loop's tail after its first and its last batch;
  // the drain polls (a query is not a host sync), so only the loop's own syncs are counted.
  [[nodiscard]] repetition measure(std::size_t steps) override {
    Event first(shared_.device, event_timing::enabled);
    Event last(shared_.device, event_timing::enabled);
    const allocator_stats memory_before = shared_.allocator.stats();
    const std::uint64_t syncs_before = shared_.syncs->count();
    const std::uint64_t waits_before = loop_->loader_waits();
    const double copy_before = shared_.copy_busy_us();
    const clock_type::time_point start = clock_type::now();
    for (std::size_t i = 0; i < steps; ++i) {
      loop_->step(next_batch_++);
      if (i == 0) first.record(loop_->tail());
    }
    last.record(loop_->tail());
    const allocator_stats memory_after = shared_.allocator.stats();
    const std::uint64_t waits = loop_->loader_waits() - waits_before;
    const std::uint64_t syncs = shared_.syncs->count() - syncs_before;
    while (!last.query()) std::this_thread::yield();
    const double wall_us = us_between(start, clock_type::now());
    return {.step_us = static_cast<double>(elapsed_ms(first, last)) * 1e3 / static_cast<double>(steps - 1),
            .wall_step_us = wall_us / static_cast<double>(steps),
            .h2d_gbps = gbps(batch_bytes_, steps, shared_.copy_busy_us() - copy_before),
            .loop_allocations = (memory_after.allocation.allocated - memory_before.allocation.allocated) +
                                (memory_after.num_device_alloc - memory_before.num_device_alloc),
            .loop_frees = (memory_after.allocation.freed - memory_before.allocation.freed) +
                          (memory_after.num_device_free - memory_before.num_device_free),
            .loop_host_syncs = syncs - waits,
            .blocked_waits = waits,
            .last_loss = loop_->last_loss()};
  }

 private:
  std::string name_;
  bench_device& shared_;
  std::unique_ptr<demo::hand_loop> loop_;
  std::size_t batch_bytes_;
  std::size_t next_batch_ = 0;
};

/// The loop by hand of variant_names()[k] (k >= 1), its ops through `ops`.
std::unique_ptr<demo::hand_loop> make_loop(std::size_t k, const Device& device, demo::loop_ops& ops,
                                           const demo::training_config& config, std::size_t depth) {
  switch (k) {
    case 1: return std::make_unique<demo::one_stream_loop>(device, ops, config, depth);
    case 2: return std::make_unique<demo::four_stream_loop>(device, ops, config, demo::four_stream_options{.staging_slots = depth});
    case 3: return std::make_unique<demo::prefetcher_loop>(device, ops, config, depth);
    default: throw usage_error("pipeline_compare_bench: no loop by hand for variant " + std::to_string(k));
  }
}

/// Each stage stream's busy time between two usage reports, per batch.
double busy_per_step(const monitor::usage_report& before, const monitor::usage_report& after, const std::string& stream,
                     std::size_t steps) {
  double busy = 0;
  for (const monitor::stream_usage& s : after.streams) busy += s.name == stream ? s.busy_us : 0;
  for (const monitor::stream_usage& s : before.streams) busy -= s.name == stream ? s.busy_us : 0;
  return busy / static_cast<double>(steps);
}

}  // namespace

bench_device::bench_device(const Device& device) : device(device), allocator(device), collector(device) {
  attach_observer(device, syncs);
}

bench_device::~bench_device() { detach_observer(device, syncs.get()); }

double bench_device::copy_busy_us() {
  double busy = 0;
  for (const monitor::device_usage& d : collector.usage().devices) busy += d.copy_us;
  return busy;
}

const std::vector<std::string>& variant_names() {
  static const std::vector<std::string> names = {"pipeline", "one_stream", "four_streams", "prefetcher"};
  return names;
}

std::vector<std::unique_ptr<variant>> make_variants(bench_device& shared, const demo::training_config& config,
                                                    std::size_t depth) {
  std::vector<std::unique_ptr<variant>> variants;
  variants.push_back(std::make_unique<pipeline_variant>(shared, config, depth));
  for (std::size_t k = 1; k < variant_names().size(); ++k) {
    variants.push_back(std::make_unique<hand_variant>(variant_names()[k], shared,
                                                      make_loop(k, shared.device, shared.ops, config, depth),
                                                      config.batch_bytes()));
  }
  return variants;
}

std::vector<std::size_t> check_hazards(const Device& device, const demo::training_config& config, std::size_t depth,
                                       std::size_t steps) {
  std::vector<std::size_t> found;
  for (std::size_t k = 0; k < variant_names().size(); ++k) {
    caching_allocator allocator(device);
    hazard::tracker hazards(device, hazard::policy::report);
    if (k == 0) {
      demo::training_step training(config, device.backend());
      pipeline::pipeline checked(device, allocator, training.spec(depth), &hazards);
      (void)checked.run(steps);
    } else {
      hazard::tracked_allocator memory(allocator, hazards);
      demo::loop_ops ops(hazards, memory);
      const std::unique_ptr<demo::hand_loop> loop = make_loop(k, device, ops, config, depth);
      for (std::size_t batch = 0; batch < steps; ++batch) loop->step(batch);
    }
    const std::vector<hazard::hazard> all = hazards.hazards();
    found.push_back(static_cast<std::size_t>(
        std::count_if(all.begin(), all.end(), [](const hazard::hazard& h) { return !hazard::is_informational(h.kind); })));
  }
  return found;
}

config_bound measure_bound(bench_device& shared, const demo::training_config& config, std::size_t depth,
                           std::size_t steps) {
  demo::training_step training(config, shared.device.backend());
  pipeline::pipeline alone(shared.device, shared.allocator, training.spec(depth));
  const monitor::usage_report before = shared.collector.usage();
  (void)alone.run(steps, pipeline::run_mode::alone);
  const monitor::usage_report after = shared.collector.usage();
  config_bound result;
  for (std::size_t k = 0; k < alone.stage_count(); ++k) {
    const double alone_us = busy_per_step(before, after, alone.stream_of(k).name(), steps);
    result.stages.push_back({alone.stage(k).name, alone.stage(k).resource, alone_us, 0});
  }
  result.bound = pipeline::compute_bound(result.stages, 0);
  return result;
}

}  // namespace streamsafe::bench
