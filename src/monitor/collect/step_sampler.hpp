// Sampled always-on collection (collector_options::sample_every_steps): which steps have their
// device ops collected. Steps are counted by collector::step(); step 0 begins with the collector.
// Step k is sampled when k mod every < window, so each period of `every` steps opens with a
// window of `window` sampled steps. Pure bookkeeping; the collector switches the source.
// Thread safety: none; the collector holds its lock around every call.
#pragma once

#include <cstddef>
#include <cstdint>

namespace streamsafe::monitor::detail {

class step_sampler {
 public:
  /// every <= 1, or window >= every: every step is sampled (no sampling).
  step_sampler(std::size_t every, std::size_t window) : every_(every), window_(window == 0 ? 1 : window) {}

  [[nodiscard]] bool sampling() const { return every_ > 1 && window_ < every_; }
  /// Whether the step in progress is in a sampled window.
  [[nodiscard]] bool in_window() const { return !sampling() || step_ % every_ < window_; }
  /// Ends the step in progress; `collected`: whether its ops were collected (a sampled step, or
  /// one inside a traced window).
  void end_step(bool collected) {
    ++step_;
    collected_ += collected ? 1 : 0;
  }
  [[nodiscard]] std::uint64_t steps() const { return step_; }
  /// The fraction of the ended steps whose ops were collected; 1 before the first step ends.
  [[nodiscard]] double collected_fraction() const {
    return step_ == 0 ? 1.0 : static_cast<double>(collected_) / static_cast<double>(step_);
  }

 private:
  std::size_t every_;
  std::size_t window_;
  std::uint64_t step_ = 0;
  std::uint64_t collected_ = 0;
};

}  // namespace streamsafe::monitor::detail
