// Replays an allocation trace through an allocator (streamsafe's caching_allocator, or any
// replay_target), as one pass or as a training loop of several, and measures each pass.
#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <span>
#include <unordered_map>
#include <utility>

#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe {

namespace {

/// PyTorch's own peak reserved, from the segment events (0 when the trace has none).
std::uint64_t original_peak_reserved(const std::vector<trace_event>& events) {
  std::int64_t reserved = 0;
  std::int64_t peak = 0;
  for (const trace_event& e : events) {
    const auto size = static_cast<std::int64_t>(e.size);
    if (e.action == trace_action::segment_alloc || e.action == trace_action::segment_map) reserved += size;
    if (e.action == trace_action::segment_free || e.action == trace_action::segment_unmap) reserved -= size;
    peak = std::max(peak, reserved);
  }
  return static_cast<std::uint64_t>(peak);
}

/// For each event, whether it is an allocation the trace frees again (at `frees`): the ones a
/// later pass repeats. The others stay live to the end of the trace (weights).
std::vector<bool> repeated_allocations(const std::vector<trace_event>& events, trace_action frees) {
  std::vector<bool> repeated(events.size(), false);
  std::unordered_map<std::uint64_t, std::size_t> live;  // trace addr -> index of its alloc
  for (std::size_t i = 0; i < events.size(); ++i) {
    const trace_event& e = events[i];
    if (e.action == trace_action::alloc && e.size != 0) {
      live[e.addr] = i;
    } else if (e.action == frees) {
      if (const auto it = live.find(e.addr); it != live.end()) {
        repeated[it->second] = true;
        live.erase(it);
      }
    }
  }
  return repeated;
}

class caching_target final : public replay_target {
 public:
  caching_target(const Device& device, const allocator_options& options) : allocator_(device, options) {}
  void* allocate(std::size_t bytes, StreamRef stream) override { return allocator_.allocate(bytes, stream); }
  void deallocate(void* ptr) override { allocator_.deallocate(ptr); }
  void record_stream(void* ptr, StreamRef stream) override { allocator_.record_stream(ptr, stream); }
  void reset_reserved_peak() override { allocator_.reset_reserved_peak(); }
  replay_counters counters() const override {
    const allocator_stats s = allocator_.stats();
    return replay_counters{.device_calls = s.device_calls.total(),
                           .device_calls_by_kind = s.device_calls,
                           .device_allocations = s.num_device_alloc,
                           .host_syncs = s.num_host_syncs,
                           .cross_stream_reuses = s.num_cross_stream_reuses,
                           .peak_reserved_bytes = static_cast<std::uint64_t>(s.reserved_bytes.peak),
                           .plan_activations = s.num_plan_activations,
                           .plan_derailments = s.num_plan_derailments,
                           .planned_allocations = s.num_planned_allocations,
                           .plan_arena_bytes = s.plan_arena_bytes};
  }

 private:
  caching_allocator allocator_;
};

class loop_replayer {
 public:
  loop_replayer(const std::vector<trace_event>& events, const replay_streams& streams, replay_target& target,
                const replay_loop& loop)
      : events_(events),
        loop_(loop),
        frees_(loop.free_point == replay_free_point::requested ? trace_action::free_requested
                                                               : trace_action::free_completed),
        repeated_(repeated_allocations(events, frees_)),
        streams_(streams),
        allocator_(target) {
    live_.reserve(1 << 16);
  }
  loop_replayer(const loop_replayer&) = delete;
  loop_replayer& operator=(const loop_replayer&) = delete;
  ~loop_replayer() {
    for (const auto& [addr, entry] : live_) allocator_.deallocate(entry.first);
    for (void* ptr : kept_) allocator_.deallocate(ptr);
  }

  replay_result run();

 private:
  replay_iteration pass(std::size_t iteration);
  void replay(const trace_event& e, std::size_t index, std::size_t iteration, replay_iteration& figures);
  void allocate(const trace_event& e);
  /// False when nothing is live at the address (the free is skipped).
  bool free(const trace_event& e, bool first_pass);
  void record(const trace_event& e, bool first_pass);
  void step(const trace_event& e);
  /// Runs `call` into the allocator, adding its host time to the pass's allocator_ns.
  template <class Call>
  decltype(auto) timed(Call&& call);

  const std::vector<trace_event>& events_;
  const replay_loop& loop_;
  const trace_action frees_;
  const std::vector<bool> repeated_;
  const replay_streams& streams_;
  replay_target& allocator_;
  std::unordered_map<std::uint64_t, std::pair<void*, std::uint64_t>> live_;  // trace addr -> ours, size
  // What the first pass leaves live stays, out of live_: a later pass may reuse its trace
  // addresses (an activation's address, before a weight took it).
  std::vector<void*> kept_;
  std::uint64_t live_bytes_ = 0;
  std::uint64_t pass_peak_live_ = 0;
  std::uint64_t unmatched_ = 0;
  std::uint64_t record_streams_ = 0;
  std::size_t since_step_ = 0;
  std::size_t events_done_ = 0;
  std::uint64_t allocator_ns_ = 0;  // of the pass running
  std::uint64_t timed_calls_ = 0;   // of the pass running
};

/// Runs `call`, adding the host time between a clock read before it and one after it to `total`.
template <class Call>
decltype(auto) timed_into(std::uint64_t& total, Call&& call) {
  struct add_on_exit {
    std::uint64_t& total;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    ~add_on_exit() {
      total += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    }
  } clock{total};
  return call();
}

/// What timed_into adds around a call that does nothing, in ns, so that the clock's share of a
/// pass's timed calls can be told apart from the calls': the median of batches' means, so that
/// the thread losing its core during one batch does not move it.
double ns_per_empty_timing() {
  constexpr int batches = 15;
  constexpr int per_batch = 4096;
  std::array<double, batches> means{};
  for (double& mean : means) {
    std::uint64_t total = 0;
    for (int i = 0; i < per_batch; ++i) timed_into(total, [] {});
    mean = static_cast<double>(total) / per_batch;
  }
  std::nth_element(means.begin(), means.begin() + batches / 2, means.end());
  return means[batches / 2];
}

template <class Call>
decltype(auto) loop_replayer::timed(Call&& call) {
  ++timed_calls_;
  return timed_into(allocator_ns_, std::forward<Call>(call));
}

replay_result loop_replayer::run() {
  replay_result result;
  result.free_point = loop_.free_point;
  result.streams = streams_.size();
  result.original_peak_reserved_bytes = original_peak_reserved(events_);
  std::uint64_t elapsed_ns = 0;
  for (std::size_t i = 0; i < std::max<std::size_t>(loop_.iterations, 1); ++i) {
    const replay_iteration figures = pass(i);
    result.operations += figures.operations;
    result.peak_live_bytes = std::max(result.peak_live_bytes, figures.peak_live_bytes);
    result.peak_reserved_bytes = std::max(result.peak_reserved_bytes, figures.peak_reserved_bytes);
    elapsed_ns += figures.elapsed_ns;
    result.iterations.push_back(figures);
  }
  if (loop_.progress) loop_.progress(events_done_, events_done_);
  result.unmatched_frees = unmatched_;
  result.record_streams = record_streams_;
  const replay_counters end = allocator_.counters();
  result.device_allocations = end.device_allocations;
  result.plan_activations = end.plan_activations;
  result.plan_derailments = end.plan_derailments;
  result.planned_allocations = end.planned_allocations;
  result.plan_arena_bytes = end.plan_arena_bytes;
  result.ns_per_op =
      result.operations == 0 ? 0.0 : static_cast<double>(elapsed_ns) / static_cast<double>(result.operations);
  return result;
}

replay_iteration loop_replayer::pass(std::size_t iteration) {
  const replay_counters before = allocator_.counters();
  allocator_.reset_reserved_peak();
  pass_peak_live_ = live_bytes_;
  allocator_ns_ = 0;
  timed_calls_ = 0;
  replay_iteration figures;
  const std::size_t total = events_.size() * std::max<std::size_t>(loop_.iterations, 1);
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < events_.size(); ++i) {
    if ((++events_done_ & 0xFFFF) == 0 && loop_.progress) loop_.progress(events_done_, total);
    replay(events_[i], i, iteration, figures);
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  for (const auto& [addr, entry] : live_) kept_.push_back(entry.first);
  live_.clear();
  const replay_counters after = allocator_.counters();
  figures.elapsed_ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  figures.allocator_ns = allocator_ns_;
  // After the pass, so the busy work it queued and the caches it left are those its calls met.
  figures.timer_ns = static_cast<std::uint64_t>(static_cast<double>(timed_calls_) * ns_per_empty_timing());
  figures.peak_live_bytes = pass_peak_live_;
  figures.peak_reserved_bytes = after.peak_reserved_bytes;
  figures.device_calls = after.device_calls - before.device_calls;
  figures.device_calls_by_kind = after.device_calls_by_kind.since(before.device_calls_by_kind);
  figures.host_syncs = after.host_syncs - before.host_syncs;
  figures.cross_stream_reuses = after.cross_stream_reuses - before.cross_stream_reuses;
  return figures;
}

void loop_replayer::replay(const trace_event& e, std::size_t index, std::size_t iteration,
                           replay_iteration& figures) {
  const bool first_pass = iteration == 0;
  if (e.action == trace_action::alloc) {
    if (e.size == 0 || (!first_pass && !repeated_[index])) return;  // kept ones stay from the first pass
    allocate(e);
  } else if (e.action == frees_) {
    if (!free(e, first_pass)) return;
  } else {
    if (e.action == trace_action::record_stream) record(e, first_pass);
    return;
  }
  ++figures.operations;
  step(e);
}

void loop_replayer::allocate(const trace_event& e) {
  StreamRef stream = streams_.at(e.stream);
  void* ptr = timed([&] { return allocator_.allocate(e.size, stream); });
  if (!live_.try_emplace(e.addr, ptr, e.size).second) {
    allocator_.deallocate(ptr);
    throw parse_error("allocation trace, line " + std::to_string(e.line) + ": alloc of address " +
                          std::to_string(e.addr) + ", which is still live",
                      e.line);
  }
  live_bytes_ += e.size;
  pass_peak_live_ = std::max(pass_peak_live_, live_bytes_);
  if (loop_.work.touch) loop_.work.touch(stream, ptr, e.size);
}

bool loop_replayer::free(const trace_event& e, bool first_pass) {
  const auto it = live_.find(e.addr);
  if (it == live_.end()) {
    if (first_pass) ++unmatched_;  // allocated before the recording started
    return false;
  }
  timed([&] { allocator_.deallocate(it->second.first); });
  live_bytes_ -= it->second.second;
  live_.erase(it);
  return true;
}

void loop_replayer::record(const trace_event& e, bool first_pass) {
  const auto it = live_.find(e.addr);
  if (it == live_.end()) {
    if (first_pass) ++unmatched_;
    return;
  }
  StreamRef stream = streams_.at(e.stream);
  if (loop_.work.touch) loop_.work.touch(stream, it->second.first, it->second.second);
  timed([&] { allocator_.record_stream(it->second.first, stream); });
  ++record_streams_;
}

void loop_replayer::step(const trace_event& e) {
  if (loop_.work.step_every == 0 || !loop_.work.step || ++since_step_ < loop_.work.step_every) return;
  since_step_ = 0;
  // A free's stream may be one no allocation used (the trace's id for it): the step goes where
  // the trace's work goes, and a stream only freed on has none.
  if (const auto it = streams_.find(e.stream); it != streams_.end()) loop_.work.step(it->second);
}

replay_phase summarize(std::span<const replay_iteration> passes) {
  replay_phase phase{.iterations = passes.size()};
  if (passes.empty()) return phase;
  std::uint64_t operations = 0;
  std::uint64_t elapsed_ns = 0;
  std::uint64_t allocator_ns = 0;
  std::uint64_t timer_ns = 0;
  std::uint64_t calls = 0;
  std::uint64_t syncs = 0;
  std::uint64_t reuses = 0;
  for (const replay_iteration& p : passes) {
    operations += p.operations;
    elapsed_ns += p.elapsed_ns;
    allocator_ns += p.allocator_ns;
    timer_ns += p.timer_ns;
    calls += p.device_calls;
    syncs += p.host_syncs;
    reuses += p.cross_stream_reuses;
    phase.peak_live_bytes = std::max(phase.peak_live_bytes, p.peak_live_bytes);
    phase.peak_reserved_bytes = std::max(phase.peak_reserved_bytes, p.peak_reserved_bytes);
  }
  const auto n = static_cast<double>(passes.size());
  const auto per_op = [operations](std::uint64_t ns) {
    return operations == 0 ? 0.0 : static_cast<double>(ns) / static_cast<double>(operations);
  };
  phase.ns_per_op = per_op(elapsed_ns);
  phase.allocator_ns_per_op = per_op(allocator_ns);
  phase.timer_ns_per_op = per_op(timer_ns);
  phase.device_calls_per_iteration = static_cast<double>(calls) / n;
  phase.host_syncs_per_iteration = static_cast<double>(syncs) / n;
  phase.cross_stream_reuses_per_iteration = static_cast<double>(reuses) / n;
  return phase;
}

}  // namespace

replay_phase first_iteration(const replay_result& result) {
  return summarize(std::span(result.iterations).first(std::min<std::size_t>(result.iterations.size(), 1)));
}

replay_phase steady_state(const replay_result& result) {
  if (result.iterations.size() < 2) return {};
  return summarize(std::span(result.iterations).subspan(1));
}

replay_phase last_iteration(const replay_result& result) {
  if (result.iterations.size() < 2) return {};
  return summarize(std::span(result.iterations).last(1));
}

std::unique_ptr<replay_target> make_caching_replay_target(const Device& device, const allocator_options& options) {
  return std::make_unique<caching_target>(device, options);
}

replay_streams make_replay_streams(const std::vector<trace_event>& events, const Device& device) {
  replay_streams streams;
  for (const trace_event& e : events) {
    if (e.action != trace_action::alloc && e.action != trace_action::record_stream) continue;
    if (streams.contains(e.stream)) continue;
    streams.emplace(e.stream, Stream(device, stream_options{.name = "trace stream " + std::to_string(e.stream)}));
  }
  return streams;
}

replay_result replay_alloc_trace(const std::vector<trace_event>& events, const replay_streams& streams,
                                 replay_target& target, const replay_loop& loop) {
  loop_replayer replayer(events, streams, target, loop);
  return replayer.run();
}

replay_result replay_alloc_trace(const std::vector<trace_event>& events, const Device& device,
                                 const allocator_options& options, const replay_loop& loop) {
  const replay_streams streams = make_replay_streams(events, device);  // outlive the allocator
  caching_target target(device, options);
  return replay_alloc_trace(events, streams, target, loop);
}

}  // namespace streamsafe
