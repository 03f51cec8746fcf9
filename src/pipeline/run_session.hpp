// One run of a pipeline: sets up every buffer and event, runs the batches, then drains and frees.
// Everything the loop touches exists before the first batch, so the loop allocates nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <optional>
#include <string_view>
#include <vector>

#include "host_pool.hpp"
#include "pipeline_state.hpp"
#include "streamsafe/hazard/tracked_allocator.hpp"

namespace streamsafe::pipeline::detail {

/// Every buffer of every slot; frees them on destruction (after the session drained the streams).
class slot_memory {
 public:
  slot_memory(pipeline::state& owner, hazard::tracked_allocator* tracked);
  ~slot_memory();
  slot_memory(const slot_memory&) = delete;
  slot_memory& operator=(const slot_memory&) = delete;
  [[nodiscard]] byte_span at(std::size_t buffer, std::size_t slot) const;

 private:
  void release() noexcept;
  void* allocate(const buffer_node& node);
  void free(const buffer_node& node, void* ptr) noexcept;
  pipeline::state& owner_;
  hazard::tracked_allocator* tracked_;
  std::vector<std::vector<std::byte*>> memory_;  // [buffer][slot]; a shared buffer repeats its one copy
};

/// The pooled events of every slot: one per edge, one per stage (its fence), one per signal.
struct slot_events {
  std::vector<PooledEvent> edges;
  std::vector<PooledEvent> done;
  std::vector<PooledEvent> signals;
};

/// Part of a buffer: `bytes` bytes from `offset`.
struct byte_range {
  std::size_t offset = 0;
  std::size_t bytes = 0;
};

class run_session {
 public:
  run_session(pipeline::state& owner, run_mode mode);
  /// Joins the producer threads, synchronizes every stage stream, then frees (never throws).
  ~run_session();
  run_session(const run_session&) = delete;
  run_session& operator=(const run_session&) = delete;

  run_stats run(std::size_t batches);

  // For stage_context.
  [[nodiscard]] const std::string& stage_name(std::size_t stage) const { return owner_.spec.stages[stage].name; }
  [[nodiscard]] StreamRef stream(std::size_t stage) const { return owner_.streams[stage]; }
  /// A declared buffer; an input is waited for here, at the body's first request for it.
  [[nodiscard]] byte_span declared(std::size_t stage, std::size_t slot, std::size_t batch, std::string_view name);
  void launch(std::size_t stage, const kernel& work, std::initializer_list<const_byte_span> reads,
              std::initializer_list<const_byte_span> writes);
  void copy(std::size_t stage, byte_span dst, const_byte_span src);
  void publish(std::size_t stage, std::size_t slot, std::size_t batch, std::string_view signal);
  void wait_for(std::size_t stage, std::size_t batch, std::string_view signal);
  void all_reduce(std::size_t stage, std::size_t slot, std::size_t batch, collectives::communicator& comm,
                  std::string_view signal, std::string_view buffer, byte_range range,
                  const collectives::collective_label& label);
  void synchronize(std::size_t stage);

 private:
  [[nodiscard]] std::size_t slot_of(std::size_t batch) const { return batch % owner_.spec.depth; }
  void start_producer(std::size_t batch);
  void produce(std::size_t batch);
  void await_staging(std::size_t batch);
  void deliver(std::size_t batch);
  void enqueue_stage(std::size_t stage, std::size_t batch);
  void order_stage(std::size_t stage, std::size_t batch);
  void fence_wait(EventRef event);
  void wait_end(std::size_t stage, std::size_t from, std::size_t batch, EventRef event);
  void wait_input(std::size_t stage, std::size_t batch, const lazy_input& input);
  void wait_signal(std::size_t stage, std::size_t batch, std::size_t signal);
  void host_saw(std::size_t stage, std::size_t batch);
  void initialize_stages();
  void wait_initialized(std::size_t stage, std::size_t writer);
  [[nodiscard]] std::vector<std::size_t> host_fence() const;
  [[nodiscard]] byte_span covered(std::size_t stage, std::size_t slot, std::size_t signal, std::string_view buffer,
                                  byte_range range) const;
  [[nodiscard]] std::size_t signal_index(std::size_t stage, std::string_view signal, bool publishing) const;
  void drain() noexcept;
  void count_loop(const allocator_stats& before, const allocator_stats& after, run_stats& stats) const;

  pipeline::state& owner_;
  run_mode mode_;
  std::size_t batches_ = 0;
  std::optional<hazard::tracked_allocator> tracked_;
  std::optional<slot_memory> memory_;
  std::vector<slot_events> events_;  // [slot]
  /// What each agent is ordered after, so that no wait is enqueued twice or when already implied:
  /// entry m of a clock is how many batches of stage m's work (from the first) that agent is
  /// ordered after. clocks_[stage] is the stage stream's; recorded_[slot][stage] the clock its
  /// events of the slot captured at its last record; host_clock_ what the host has seen done.
  /// Main thread only.
  using stage_clock = std::vector<std::size_t>;
  std::vector<stage_clock> clocks_;
  std::vector<std::vector<stage_clock>> recorded_;
  stage_clock host_clock_;
  std::vector<stage_clock> signal_clocks_;              // [signal]: the publisher's clock at publish
  std::vector<std::vector<std::size_t>> signal_seen_;  // [stage][signal]: 1 + the batch it waited for
  std::vector<std::size_t> published_;     // [signal]: the batch that last published it
  std::vector<std::future<void>> staged_;  // [slot]: the producer's fill of the slot's next batch
  std::atomic<std::uint64_t> fence_waits_{0};
  std::atomic<std::uint64_t> fence_waits_blocked_{0};
  std::uint64_t requested_syncs_ = 0;
  bool initializing_ = false;
  std::vector<PooledEvent> initialized_;         // [stage]: recorded after its initialize
  std::vector<std::vector<bool>> init_seen_;     // [stage][writer]: waited for its initialize
  std::vector<std::chrono::steady_clock::time_point> result_times_;  // first and last results seen
  std::optional<host_pool> producers_;
};

}  // namespace streamsafe::pipeline::detail
