// Sampled always-on collection: which steps (collector_options::sample_every_steps) or which
// stretches of wall time (sample_period / sample_window) have their device ops collected.
//
// One rule decides both: a duty_cycle over a position that only grows (the number of ended
// steps, or the nanoseconds since the collector started) is in its window when
// position mod period < window, so every period opens with a window. step_sampler counts steps
// through it; time_sampler feeds it the clock and keeps the next boundary, so the collector's
// hot-path check is one compare. Pure bookkeeping: the collector switches the source.
// Thread safety: none; the collector holds its lock around every call.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace streamsafe::monitor::detail {

/// The clock time-based sampling reads, in nanoseconds: the steady clock, or a test's.
using sampling_clock = std::int64_t (*)();
[[nodiscard]] std::int64_t steady_clock_ns();
/// Tests only: collectors constructed from now on read `clock` (nullptr: the steady clock).
void set_sampling_clock_for_testing(sampling_clock clock);
[[nodiscard]] sampling_clock current_sampling_clock();

/// A window of `window` positions at the start of every `period` positions.
class duty_cycle {
 public:
  static constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();

  constexpr duty_cycle(std::uint64_t period, std::uint64_t window) : period_(period), window_(window) {}

  /// Sampling when 0 < window < period; otherwise every position is in the window.
  [[nodiscard]] constexpr bool sampling() const { return window_ > 0 && window_ < period_; }
  [[nodiscard]] constexpr bool in_window(std::uint64_t position) const {
    return !sampling() || position % period_ < window_;
  }
  /// How many positions of [0, position) are in a window (all of them without sampling).
  [[nodiscard]] constexpr std::uint64_t in_window_before(std::uint64_t position) const {
    if (!sampling()) return position;
    return position / period_ * window_ + std::min(position % period_, window_);
  }
  /// The first position after `position` where in_window() changes; `never` without sampling.
  [[nodiscard]] constexpr std::uint64_t next_change(std::uint64_t position) const {
    if (!sampling()) return never;
    const std::uint64_t period_start = position - position % period_;
    return position % period_ < window_ ? period_start + window_ : period_start + period_;
  }

 private:
  std::uint64_t period_;
  std::uint64_t window_;
};

/// Step-based: step k (counted by collector::step(); step 0 begins with the collector) is
/// sampled when duty_cycle(every, window).in_window(k).
class step_sampler {
 public:
  /// every <= 1, or window >= every: every step is sampled (no sampling). window 0 means 1.
  step_sampler(std::size_t every, std::size_t window) : cycle_(every, window == 0 ? 1 : window) {}

  [[nodiscard]] bool sampling() const { return cycle_.sampling(); }
  /// Whether the step in progress is in a sampled window.
  [[nodiscard]] bool in_window() const { return cycle_.in_window(step_); }
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
  duty_cycle cycle_;
  std::uint64_t step_ = 0;
  std::uint64_t collected_ = 0;
};

/// Time-based: the instant `start_ns + t` is sampled when duty_cycle(period, window).in_window(t)
/// (t in nanoseconds). The collector calls due() with the clock on its callbacks and advance()
/// when it is due or when tracing starts or stops; the time between two advances is credited
/// as collected where it falls in a window (all of it while tracing).
class time_sampler {
 public:
  time_sampler(std::chrono::nanoseconds period, std::chrono::nanoseconds window, std::int64_t start_ns)
      : cycle_(non_negative(period), non_negative(window)),
        start_ns_(start_ns),
        next_change_ns_(absolute(cycle_.next_change(0))) {}

  [[nodiscard]] bool sampling() const { return cycle_.sampling(); }
  /// Whether a window opens or closes at or before `now_ns`: the hot-path check. Always false
  /// without sampling.
  [[nodiscard]] bool due(std::int64_t now_ns) const { return now_ns >= next_change_ns_; }
  /// Moves to `now_ns` (earlier times, from a thread that read the clock before another, count
  /// as the current position), crediting the time since the last advance as collected where it
  /// fell in a window, or all of it when `all_collected` (the collector was tracing).
  void advance(std::int64_t now_ns, bool all_collected) {
    const std::uint64_t to = std::max(position_, now_ns > start_ns_ ? static_cast<std::uint64_t>(now_ns - start_ns_) : 0);
    collected_ns_ += all_collected ? to - position_ : cycle_.in_window_before(to) - cycle_.in_window_before(position_);
    position_ = to;
    next_change_ns_ = absolute(cycle_.next_change(to));
  }
  /// Whether the position of the last advance is in a window.
  [[nodiscard]] bool in_window() const { return cycle_.in_window(position_); }
  /// The fraction of the time up to the last advance that was collected; 1 before any passed.
  [[nodiscard]] double collected_fraction() const {
    return position_ == 0 ? 1.0 : static_cast<double>(collected_ns_) / static_cast<double>(position_);
  }

 private:
  static std::uint64_t non_negative(std::chrono::nanoseconds d) {
    return d.count() > 0 ? static_cast<std::uint64_t>(d.count()) : 0;
  }
  [[nodiscard]] std::int64_t absolute(std::uint64_t position) const {
    if (position == duty_cycle::never) return std::numeric_limits<std::int64_t>::max();
    return start_ns_ + static_cast<std::int64_t>(position);
  }

  duty_cycle cycle_;
  std::int64_t start_ns_;
  std::int64_t next_change_ns_;
  std::uint64_t position_ = 0;  // nanoseconds since start_ns_ at the last advance
  std::uint64_t collected_ns_ = 0;
};

}  // namespace streamsafe::monitor::detail
