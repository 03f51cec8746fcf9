#include "run_session.hpp"

#include <algorithm>

#include "streamsafe/hazard/tracker.hpp"
#include "streamsafe/pipeline/collectives/communicator.hpp"

namespace streamsafe::pipeline::detail {

namespace {

// Runs `step`; any failure but a pipeline_error becomes one naming the batch and the stage.
template <typename Step>
void attributed(std::size_t batch, const std::string& stage, Step&& step) {
  try {
    std::forward<Step>(step)();
  } catch (const pipeline_error&) {
    throw;
  } catch (...) {
    throw pipeline_error(batch, stage, std::current_exception());
  }
}

StreamRef stream_of_writer(const pipeline::state& owner, const buffer_node& node) {
  return node.writer == host_side ? owner.device.default_stream() : StreamRef(owner.streams[node.writer]);
}

std::vector<std::size_t> all_stages_latest_first(std::size_t count) {
  std::vector<std::size_t> stages(count);
  for (std::size_t k = 0; k < count; ++k) stages[k] = count - 1 - k;
  return stages;
}

void join(std::vector<std::size_t>& into, const std::vector<std::size_t>& from) {
  for (std::size_t m = 0; m < into.size(); ++m) into[m] = std::max(into[m], from[m]);
}

}  // namespace

// ---- memory ----

slot_memory::slot_memory(pipeline::state& owner, hazard::tracked_allocator* tracked)
    : owner_(owner), tracked_(tracked) {
  const std::size_t depth = owner.spec.depth;
  try {
    for (const buffer_node& node : owner.graph.buffers) {
      std::vector<std::byte*>& slots = memory_.emplace_back();
      const bool one_copy = node.spec.scope == buffer_scope::shared;
      for (std::size_t s = 0; s < depth; ++s) {
        slots.push_back(one_copy && s > 0 ? slots.front() : static_cast<std::byte*>(allocate(node)));
      }
    }
  } catch (...) {
    release();
    throw;
  }
}

slot_memory::~slot_memory() { release(); }

void slot_memory::release() noexcept {
  for (std::size_t b = 0; b < memory_.size(); ++b) {
    const buffer_node& node = owner_.graph.buffers[b];
    const std::size_t copies = node.spec.scope == buffer_scope::shared ? 1 : memory_[b].size();
    for (std::size_t s = 0; s < copies && s < memory_[b].size(); ++s) free(node, memory_[b][s]);
  }
  memory_.clear();
}

void* slot_memory::allocate(const buffer_node& node) {
  if (node.spec.place == memory_place::pinned) return owner_.device.allocate_pinned(node.spec.bytes);
  const StreamRef stream = stream_of_writer(owner_, node);
  return tracked_ != nullptr ? tracked_->allocate(node.spec.bytes, stream) : owner_.allocator.allocate(node.spec.bytes, stream);
}

void slot_memory::free(const buffer_node& node, void* ptr) noexcept {
  try {
    if (node.spec.place == memory_place::pinned) {
      owner_.device.deallocate_pinned(ptr);
    } else if (tracked_ != nullptr) {
      tracked_->deallocate(ptr);
    } else {
      owner_.allocator.deallocate(ptr);
    }
  } catch (...) {
    // Teardown goes on: the streams are drained, so the memory is unused whatever the error.
  }
}

byte_span slot_memory::at(std::size_t buffer, std::size_t slot) const {
  return {memory_[buffer][slot], owner_.graph.buffers[buffer].spec.bytes};
}

// ---- setup and teardown ----

run_session::run_session(pipeline::state& owner, run_mode mode) : owner_(owner), mode_(mode) {
  if (owner.hazards != nullptr) tracked_.emplace(owner.allocator, *owner.hazards);
  memory_.emplace(owner, tracked_ ? &*tracked_ : nullptr);
  const stage_graph& graph = owner.graph;
  const std::size_t depth = owner.spec.depth;
  events_.resize(depth);
  for (slot_events& slot : events_) {
    for (std::size_t e = 0; e < graph.edges.size(); ++e) slot.edges.push_back(owner.events.acquire());
    for (std::size_t k = 0; k < graph.stages.size(); ++k) slot.done.push_back(owner.events.acquire());
    for (std::size_t g = 0; g < graph.signals.size(); ++g) slot.signals.push_back(owner.events.acquire());
  }
  const std::size_t stages = graph.stages.size();
  clocks_.assign(stages, stage_clock(stages, 0));
  recorded_.assign(depth, std::vector<stage_clock>(stages, stage_clock(stages, 0)));
  host_clock_.assign(stages, 0);
  signal_clocks_.assign(graph.signals.size(), stage_clock(stages, 0));
  signal_seen_.assign(stages, std::vector<std::size_t>(graph.signals.size(), 0));
  published_.assign(graph.signals.size(), host_side);
  init_seen_.assign(stages, std::vector<bool>(stages, false));
  for (std::size_t k = 0; k < stages; ++k) initialized_.push_back(owner.events.acquire());
  staged_.resize(depth);
  if (graph.staging != host_side) producers_.emplace(std::max<std::size_t>(owner.spec.host_threads, 1));
}

run_session::~run_session() {
  producers_.reset();  // runs what was queued: each fill waits only for work already enqueued
  drain();
  memory_.reset();
  events_.clear();
  tracked_.reset();
}

void run_session::drain() noexcept {
  for (Stream& stream : owner_.streams) {
    try {
      stream.synchronize();
    } catch (...) {
      // The run already failed or its last fence reported the error: teardown must go on.
    }
  }
}

// ---- the loop ----

run_stats run_session::run(std::size_t batches) {
  batches_ = batches;
  const std::size_t depth = owner_.spec.depth;
  const allocator_stats before = owner_.allocator.stats();
  const std::size_t events_before = owner_.events.created_count();
  const auto start = std::chrono::steady_clock::now();
  initialize_stages();
  for (std::size_t j = 0; j < std::min(depth, batches); ++j) start_producer(j);
  for (std::size_t i = 0; i < batches; ++i) {
    if (i >= depth) deliver(i - depth);
    await_staging(i);
    for (std::size_t k = 0; k < owner_.streams.size(); ++k) enqueue_stage(k, i);
    if (i + depth < batches) start_producer(i + depth);
  }
  for (std::size_t j = batches > depth ? batches - depth : 0; j < batches; ++j) deliver(j);
  for (std::size_t k = 0; k < owner_.streams.size(); ++k) {
    attributed(batches == 0 ? 0 : batches - 1, stage_name(k), [&] { owner_.streams[k].synchronize(); });
  }
  run_stats stats;
  stats.batches = batches;
  stats.loop_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (result_times_.size() == 2 && batches > 1) {
    stats.step_us = std::chrono::duration<double, std::micro>(result_times_[1] - result_times_[0]).count() /
                    static_cast<double>(batches - 1);
  }
  count_loop(before, owner_.allocator.stats(), stats);
  stats.loop_events_created = owner_.events.created_count() - events_before;
  stats.events = depth * (owner_.graph.edges.size() + owner_.graph.stages.size() + owner_.graph.signals.size());
  return stats;
}

void run_session::count_loop(const allocator_stats& before, const allocator_stats& after, run_stats& stats) const {
  stats.loop_allocations = (after.allocation.allocated - before.allocation.allocated) +
                           (after.num_device_alloc - before.num_device_alloc);
  stats.loop_frees = (after.allocation.freed - before.allocation.freed) + (after.num_device_free - before.num_device_free);
  stats.requested_host_syncs = requested_syncs_;
  stats.loop_host_syncs = requested_syncs_ + (after.num_host_syncs - before.num_host_syncs);
  stats.fence_waits = fence_waits_.load();
  stats.fence_waits_blocked = fence_waits_blocked_.load();
}

void run_session::start_producer(std::size_t batch) {
  if (!producers_) return;
  staged_[slot_of(batch)] = producers_->submit([this, batch] { produce(batch); });
}

// On a pool thread. The slot's previous batch was enqueued before this task was submitted, and
// its events are not recorded again until the main thread has taken this fill (await_staging).
void run_session::produce(std::size_t batch) {
  const std::size_t slot = slot_of(batch);
  const stage_graph& graph = owner_.graph;
  if (batch >= owner_.spec.depth) {
    for (const std::size_t reader : graph.buffers[graph.staging].readers) fence_wait(events_[slot].done[reader]);
  }
  const byte_span staging = memory_->at(graph.staging, slot);
  if (owner_.hazards != nullptr) owner_.hazards->host_writes(staging.data(), staging.size());
  owner_.spec.producer(batch, staging);
}

void run_session::await_staging(std::size_t batch) {
  if (!producers_) return;
  attributed(batch, "producer", [&] { staged_[slot_of(batch)].get(); });
  if (batch < owner_.spec.depth) return;
  for (const std::size_t reader : owner_.graph.buffers[owner_.graph.staging].readers) {
    host_saw(reader, batch - owner_.spec.depth);
  }
}

std::vector<std::size_t> run_session::host_fence() const {
  const stage_graph& graph = owner_.graph;
  if (!graph.result_writers.empty()) return graph.result_writers;
  if (graph.staging != host_side) return {};  // the producer's fence bounds the batches in flight
  return all_stages_latest_first(graph.stages.size());
}

void run_session::deliver(std::size_t batch) {
  const std::size_t slot = slot_of(batch);
  for (const std::size_t writer : host_fence()) {
    if (host_clock_[writer] > batch) continue;
    attributed(batch, stage_name(writer), [&] { fence_wait(events_[slot].done[writer]); });
    host_saw(writer, batch);
  }
  if (owner_.graph.result_writers.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (result_times_.size() < 2) result_times_.push_back(now);
  result_times_.back() = now;
  if (!owner_.spec.on_result) return;
  auto lookup = [this, slot](std::string_view name) -> const_byte_span {
    const std::size_t b = owner_.graph.find_buffer(name);
    if (b == host_side || owner_.graph.buffers[b].spec.place != memory_place::pinned ||
        owner_.graph.buffers[b].spec.scope != buffer_scope::per_slot) {
      throw usage_error("pipeline: on_result: '" + std::string(name) + "' is not a pinned per-slot output");
    }
    const byte_span bytes = memory_->at(b, slot);
    if (owner_.hazards != nullptr) owner_.hazards->host_reads(bytes.data(), bytes.size());
    return bytes;
  };
  attributed(batch, "on_result", [&] { owner_.spec.on_result(result_view(batch, lookup)); });
}

void run_session::fence_wait(EventRef event) {
  fence_waits_.fetch_add(1, std::memory_order_relaxed);
  if (event.query()) return;
  fence_waits_blocked_.fetch_add(1, std::memory_order_relaxed);
  event.synchronize();
}

void run_session::host_saw(std::size_t stage, std::size_t batch) {
  join(host_clock_, recorded_[slot_of(batch)][stage]);
}

// Orders `stage`'s next work after `from`'s work of `batch`, whose end `event` captured, unless
// the stage's stream already is.
void run_session::wait_end(std::size_t stage, std::size_t from, std::size_t batch, EventRef event) {
  stage_clock& clock = clocks_[stage];
  if (clock[from] > batch) return;
  owner_.streams[stage].wait(event);
  join(clock, recorded_[slot_of(batch)][from]);
}

void run_session::wait_input(std::size_t stage, std::size_t batch, const lazy_input& input) {
  if (input.signal != host_side) {
    wait_signal(stage, batch, input.signal);
    return;
  }
  if (input.edge == host_side) return;  // the staging buffer: the producer filled it before the batch began
  const edge& in = owner_.graph.edges[input.edge];
  if (!in.previous_batch) {
    wait_end(stage, in.from, batch, events_[slot_of(batch)].edges[input.edge]);
  } else if (batch > 0) {
    wait_end(stage, in.from, batch - 1, events_[slot_of(batch - 1)].edges[input.edge]);
  } else {
    wait_initialized(stage, in.from);
  }
}

// Before the first batch: each stage's initialize, on its stream, then its event.
void run_session::initialize_stages() {
  for (std::size_t k = 0; k < owner_.streams.size(); ++k) {
    if (!owner_.spec.stages[k].initialize) continue;
    attributed(0, stage_name(k), [&] {
      initializing_ = true;
      stage_context context(*this, k, 0, 0);
      owner_.spec.stages[k].initialize(context);
      initializing_ = false;
      initialized_[k].record(owner_.streams[k]);
    });
  }
}

void run_session::wait_initialized(std::size_t stage, std::size_t writer) {
  if (!owner_.spec.stages[writer].initialize || init_seen_[stage][writer]) return;
  owner_.streams[stage].wait(initialized_[writer]);
  init_seen_[stage][writer] = true;
}

void run_session::wait_signal(std::size_t stage, std::size_t batch, std::size_t signal) {
  if (published_[signal] != batch) {
    throw usage_error("pipeline: stage '" + stage_name(stage) + "': signal '" + owner_.graph.signals[signal] +
                      "' was not published in this batch");
  }
  std::size_t& seen = signal_seen_[stage][signal];
  if (clocks_[stage][owner_.graph.publisher[signal]] > batch || seen == batch + 1) return;
  owner_.streams[stage].wait(events_[slot_of(batch)].signals[signal]);
  join(clocks_[stage], signal_clocks_[signal]);
  seen = batch + 1;
}

void run_session::enqueue_stage(std::size_t stage, std::size_t batch) {
  attributed(batch, stage_name(stage), [&] {
    const std::size_t slot = slot_of(batch);
    join(clocks_[stage], host_clock_);  // work enqueued now follows all the host has seen done
    order_stage(stage, batch);
    stage_context context(*this, stage, batch, slot);
    owner_.spec.stages[stage].body(context);
    for (const std::size_t signal : owner_.graph.stages[stage].publishes) {
      if (published_[signal] != batch) {
        throw usage_error("pipeline: the body did not publish signal '" + owner_.graph.signals[signal] + "'");
      }
    }
    clocks_[stage][stage] = batch + 1;
    recorded_[slot][stage] = clocks_[stage];
    const StreamRef stream = owner_.streams[stage];
    for (const std::size_t e : owner_.graph.stages[stage].records) events_[slot].edges[e].record(stream);
    events_[slot].done[stage].record(stream);
    if (mode_ == run_mode::alone) synchronize(stage);
  });
}

// Before the body: from the second lap of the ring on, the slot's previous users of what the
// stage rewrites (the slot fence); and the stages it follows whatever it reads (the step stage,
// a shared buffer's writer). Inputs are waited for when the body asks for them (declared).
void run_session::order_stage(std::size_t stage, std::size_t batch) {
  const stage_graph& graph = owner_.graph;
  const std::size_t slot = slot_of(batch);
  const std::size_t depth = owner_.spec.depth;
  if (batch >= depth) {
    for (const std::size_t user : graph.stages[stage].fence) wait_end(stage, user, batch - depth, events_[slot].done[user]);
  }
  for (const std::size_t e : graph.stages[stage].eager) wait_end(stage, graph.edges[e].from, batch, events_[slot].edges[e]);
}

// ---- what stage_context calls ----

byte_span run_session::declared(std::size_t stage, std::size_t slot, std::size_t batch, std::string_view name) {
  const stage_node& node = owner_.graph.stages[stage];
  for (const std::size_t b : node.buffers) {
    if (owner_.graph.buffers[b].spec.name != name) continue;
    if (initializing_ && owner_.graph.buffers[b].writer != stage) {
      throw usage_error("pipeline: stage '" + stage_name(stage) + "': initialize may touch only the stage's outputs, not '" +
                        std::string(name) + "'");
    }
    for (const lazy_input& input : node.inputs) {
      if (input.buffer == b) wait_input(stage, batch, input);
    }
    return memory_->at(b, slot);
  }
  throw usage_error("pipeline: batch " + std::to_string(batch) + ", stage '" + stage_name(stage) + "': buffer '" +
                    std::string(name) + "' is not among the stage's inputs or outputs");
}

void run_session::launch(std::size_t stage, const kernel& work, std::initializer_list<const_byte_span> reads,
                         std::initializer_list<const_byte_span> writes) {
  if (owner_.hazards == nullptr) {
    owner_.streams[stage].launch(work);
    return;
  }
  hazard::tracked_op op = owner_.hazards->on(owner_.streams[stage]);
  for (const const_byte_span r : reads) op.reads(r.data(), r.size());
  for (const const_byte_span w : writes) op.writes(w.data(), w.size());
  op.launch(work);
}

void run_session::copy(std::size_t stage, byte_span dst, const_byte_span src) {
  if (dst.size() != src.size()) {
    throw usage_error("pipeline: stage '" + stage_name(stage) + "': copy of " + std::to_string(src.size()) +
                      " bytes into a buffer of " + std::to_string(dst.size()));
  }
  if (owner_.hazards == nullptr) {
    owner_.streams[stage].copy(dst.data(), src.data(), src.size());
  } else {
    owner_.hazards->on(owner_.streams[stage]).copy(dst.data(), src.data(), src.size());
  }
}

std::size_t run_session::signal_index(std::size_t stage, std::string_view signal, bool publishing) const {
  const stage_node& node = owner_.graph.stages[stage];
  for (const std::size_t s : publishing ? node.publishes : node.waits_for) {
    if (owner_.graph.signals[s] == signal) return s;
  }
  throw usage_error("pipeline: stage '" + stage_name(stage) + "': signal '" + std::string(signal) + "' is not in its " +
                    (publishing ? "publishes" : "waits_for"));
}

void run_session::publish(std::size_t stage, std::size_t slot, std::size_t batch, std::string_view signal) {
  const std::size_t s = signal_index(stage, signal, true);
  events_[slot].signals[s].record(owner_.streams[stage]);
  signal_clocks_[s] = clocks_[stage];
  published_[s] = batch;
}

void run_session::wait_for(std::size_t stage, std::size_t batch, std::string_view signal) {
  wait_signal(stage, batch, signal_index(stage, signal, false));
}

byte_span run_session::covered(std::size_t stage, std::size_t slot, std::size_t signal, std::string_view buffer,
                               byte_range range) const {
  for (const std::size_t b : owner_.graph.signal_buffers[signal]) {
    if (owner_.graph.buffers[b].spec.name != buffer) continue;
    const byte_span whole = memory_->at(b, slot);
    if (range.offset > whole.size() || range.bytes > whole.size() - range.offset) {
      throw usage_error("pipeline: stage '" + stage_name(stage) + "': all_reduce of bytes [" + std::to_string(range.offset) +
                        ", " + std::to_string(range.offset + range.bytes) + ") of '" + std::string(buffer) + "', a buffer of " +
                        std::to_string(whole.size()));
    }
    return whole.subspan(range.offset, range.bytes);
  }
  throw usage_error("pipeline: stage '" + stage_name(stage) + "': all_reduce of '" + std::string(buffer) +
                    "', which signal '" + owner_.graph.signals[signal] + "' does not cover");
}

void run_session::all_reduce(std::size_t stage, std::size_t slot, std::size_t batch, collectives::communicator& comm,
                             std::string_view signal, std::string_view buffer, byte_range range,
                             const collectives::collective_label& label) {
  const std::size_t s = signal_index(stage, signal, false);
  const byte_span bytes = covered(stage, slot, s, buffer, range);
  wait_signal(stage, batch, s);  // the bucket's producer wrote it before the collective reads it
  const StreamRef stream = owner_.streams[stage];
  if (owner_.hazards != nullptr) {
    // The collective is enqueued by the communicator, not as a kernel: a no-op marker just before
    // it on the same stream stands for its read and write, so the engine checks them in order.
    const kernel marker{.name = "all_reduce '" + label.name + "'", .cuda = [](native_stream) {}, .sim = [] {}};
    owner_.hazards->on(stream).reads(bytes.data(), bytes.size()).writes(bytes.data(), bytes.size()).launch(marker);
    owner_.hazards->track_collective(stream, comm.group_id(), static_cast<std::size_t>(comm.size()));
  }
  comm.all_reduce(bytes.data(), bytes.size() / sizeof(float), collectives::data_type::float32, collectives::reduce_op::sum,
                  stream, label);
}

void run_session::synchronize(std::size_t stage) {
  ++requested_syncs_;
  owner_.streams[stage].synchronize();
}

}  // namespace streamsafe::pipeline::detail
