// The engine on a live device. An observer keeps the engine's clocks in step with the runtime;
// tracked ops are checked before they are enqueued; `enforce`'s insertions are carried out on
// the runtime with pooled events, while a thread-local flag keeps the observer from telling the
// engine about orderings it already applied. Every entry point takes the device's observed
// order first and the tracker's lock second (the order callbacks arrive in), so a tracked op's
// check, insertions and enqueue are one step of the runtime's order.
#include "streamsafe/hazard/tracker.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/expects.hpp"
#include "streamsafe/event_pool.hpp"
#include "streamsafe/hazard/engine.hpp"
#include "streamsafe/hazard/report_text.hpp"
#include "runtime/stream_impl.hpp"
#include "streamsafe/runtime_observer.hpp"

namespace streamsafe::hazard {

namespace {

thread_local bool applying_insertions = false;

stream_id engine_id(StreamRef stream) { return stream_id{static_cast<std::uint64_t>(stream.id())}; }
event_id engine_id(EventRef event) { return event_id{static_cast<std::uint64_t>(event.id())}; }
std::uint64_t address(const void* ptr) { return reinterpret_cast<std::uint64_t>(ptr); }

std::string location(const streamsafe::source_location& where) {
  return std::filesystem::path(where.file_name()).filename().string() + ":" + std::to_string(where.line());
}

}  // namespace

policy policy_from_environment(policy fallback) {
  const char* value = std::getenv("STREAMSAFE_HAZARDS");
  if (value == nullptr || *value == '\0') return fallback;
  const std::string name(value);
  if (name == "off") return policy::off;
  if (name == "report") return policy::report;
  if (name == "enforce") return policy::enforce;
  throw usage_error("STREAMSAFE_HAZARDS must be off, report or enforce, got '" + name + "'");
}

/// A stream the engine may name in an insertion. `keep` shares the stream with its handle, so
/// `enforce` can still act on it after the handle is gone (empty for a device's own streams,
/// which live as long as the device).
struct known_stream {
  StreamRef ref;
  std::shared_ptr<detail::StreamImpl> keep;
};

/// What `enforce` does on the runtime for one insertion, its streams resolved and held (acting
/// may run outside the tracker's lock, while another thread drops a retired stream): planning
/// takes every lookup, so acting can fail only where the runtime or the allocator does.
struct planned_insertion {
  insertion needed;
  known_stream producer;
  std::optional<known_stream> waiter;
};

/// Everything a tracker shares with its observer, under one lock.
struct tracker::state final : RuntimeObserver {
  state(const Device& device, policy mode) : device(device), model(mode), events(device) {
    model.on_hazard([this](const hazard& found) { deliver(found); });
  }

  Device device;
  std::recursive_mutex mutex;
  streamsafe::hazard::engine model;
  EventPool events;
  std::unordered_map<std::uint64_t, known_stream> streams;  // live handles, by runtime stream id
  // Destroyed handles whose work may still be pending: kept until it is seen done.
  std::unordered_map<std::uint64_t, known_stream> retired_streams;
  std::function<void(const void*, StreamRef)> record_stream_action;
  std::function<void(const hazard&)> sink;  // null: collect
  std::vector<hazard> collected;
  std::unordered_set<std::string> reported_sites;
  std::uint64_t ops = 0;

  /// A live program repeats its bugs every iteration: each (kind, pair of call sites) is
  /// reported once, so a long run's memory stays bounded.
  void deliver(const hazard& found) {
    const auto site_key = [](const op_ref& op) { return op.op + '@' + op.loc + '@' + op.stream + '|'; };
    std::string key = std::string(kind_name(found.kind)) + '|' + site_key(found.first) + site_key(found.second);
    if (!reported_sites.insert(std::move(key)).second) return;
    if (sink) {
      sink(found);
    } else {
      collected.push_back(found);
    }
  }

  /// Labels by call site, so the hot path neither formats "file:line" nor hashes strings.
  struct call_site {
    const char* file;
    unsigned line;
    friend bool operator==(const call_site&, const call_site&) = default;
  };
  struct call_site_hash {
    std::size_t operator()(const call_site& site) const noexcept {
      return std::hash<const void*>{}(site.file) * 31 + site.line;
    }
  };
  std::unordered_map<call_site, std::vector<std::pair<std::string, label_id>>, call_site_hash> site_labels;

  op_site site(std::string_view op_name, const streamsafe::source_location& where) {
    return cached_site(call_site{where.file_name(), where.line()}, op_name, [&] { return location(where); });
  }
  /// Ops the observer sees (records, waits, syncs) have no call site of their own.
  op_site site(std::string_view op_name) {
    return cached_site(call_site{nullptr, 0}, op_name, [] { return std::string(); });
  }
  template <typename Location>
  op_site cached_site(const call_site& key, std::string_view op_name, Location&& where) {
    auto& labels = site_labels[key];
    for (const auto& [name, label] : labels) {
      if (name == op_name) return op_site{label, ++ops};
    }
    const label_id label = model.label(op_name, where());
    labels.emplace_back(std::string(op_name), label);
    return op_site{label, ++ops};
  }

  void know(StreamRef stream) {
    const auto id = static_cast<std::uint64_t>(stream.id());
    if (streams.contains(id)) return;
    streams.emplace(id, known_stream{stream, stream.impl().weak_from_this().lock()});
    model.name_stream(engine_id(stream), stream.name());
  }

  /// The tracker's side of a stream's end: its handle is gone, but `enforce` may still have to
  /// wait for or record work it enqueued, so the stream is kept until that work is done.
  void forget_stream(streamsafe::stream_id id) {
    model.stream_destroy(stream_id{static_cast<std::uint64_t>(id)}, site("stream_destroy"));
    const auto node = streams.extract(static_cast<std::uint64_t>(id));
    if (node.empty() || !node.mapped().keep) return;
    if (retired_streams.size() >= retired_check_threshold) drop_idle_retired();
    retired_streams.emplace(node.key(), node.mapped());
  }
  static constexpr std::size_t retired_check_threshold = 64;
  /// A destroyed stream gets no new work: once its queue is seen empty it never needs acting on.
  /// Runs from a stream's destruction, which cannot throw: a stream whose query fails is kept.
  void drop_idle_retired() noexcept {
    std::erase_if(retired_streams, [](const auto& entry) { return seen_idle(entry.first, *entry.second.keep); });
  }
  static bool seen_idle(std::uint64_t id, detail::StreamImpl& stream) noexcept {
    try {
      return stream.query();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "streamsafe: hazard tracker: query of destroyed stream %llu failed: %s (kept)\n",
                   static_cast<unsigned long long>(id), error.what());
    } catch (...) {
      std::fprintf(stderr, "streamsafe: hazard tracker: query of destroyed stream %llu failed (kept)\n",
                   static_cast<unsigned long long>(id));
    }
    return false;
  }

  /// The stream to act on, or none when it was destroyed and its work is done (nothing to do).
  std::optional<known_stream> stream_of(stream_id id) const {
    const auto key = static_cast<std::uint64_t>(id);
    if (auto it = streams.find(key); it != streams.end()) return it->second;
    if (auto it = retired_streams.find(key); it != retired_streams.end()) return it->second;
    return std::nullopt;
  }

  /// `enforce`, first step: what the engine applied to its model, resolved to the streams that
  /// carry it out. Insertions for streams whose work is already done are dropped.
  std::vector<planned_insertion> plan(std::span<const insertion> insertions) const {
    std::vector<planned_insertion> planned;
    for (const auto& needed : insertions) {
      auto producer = stream_of(needed.producer);
      if (!producer) continue;
      std::optional<known_stream> waiter;
      if (needed.kind == insertion_kind::stream_wait) {
        waiter = stream_of(needed.waiter);
        SS_EXPECTS(waiter.has_value(), "hazard tracker: enforce must make stream ",
                   static_cast<std::uint64_t>(needed.waiter), " wait, but the tracker does not know it");
      }
      planned.push_back(planned_insertion{needed, *producer, waiter});
    }
    return planned;
  }

  /// `enforce`, second step: performs the plan on the runtime (and, for record_stream, through
  /// `record_stream`, the allocator's action) without telling the model again.
  void act(std::span<const planned_insertion> planned,
           const std::function<void(const void*, StreamRef)>& record_stream) {
    if (planned.empty()) return;
    applying_insertions = true;
    try {
      for (const auto& step : planned) act_one(step, record_stream);
    } catch (...) {
      applying_insertions = false;
      throw;
    }
    applying_insertions = false;
  }

  void act_one(const planned_insertion& step, const std::function<void(const void*, StreamRef)>& record_stream) {
    StreamRef producer = step.producer.ref;
    switch (step.needed.kind) {
      case insertion_kind::stream_wait: {
        auto marker = events.acquire();
        marker.record(producer);
        StreamRef waiter = step.waiter->ref;
        waiter.wait(marker);
        return;
      }
      case insertion_kind::host_sync: producer.synchronize(); return;
      case insertion_kind::record_stream:
        if (record_stream) {
          record_stream(reinterpret_cast<const void*>(step.needed.block), producer);
        } else {
          producer.synchronize();
        }
        return;
    }
  }

  /// Plans and acts at once, for insertions made of runtime calls only (waits, host syncs).
  void apply(std::span<const insertion> insertions) { act(plan(insertions), record_stream_action); }

  // RuntimeObserver: keep the engine's clocks in step with the runtime.
  template <typename Update>
  void observe(Update&& update) {
    if (applying_insertions) return;
    std::lock_guard lock(mutex);
    update();
  }
  void on_stream_created(StreamRef stream) override { observe([&] { know(stream); }); }
  void on_stream_destroyed(streamsafe::stream_id id) override { observe([&] { forget_stream(id); }); }
  /// The engine forgets the event's clock, so its memory stays bounded by the live events.
  void on_event_destroyed(streamsafe::event_id id) override {
    observe([&] { model.event_destroy(event_id{static_cast<std::uint64_t>(id)}, site("event_destroy")); });
  }
  void on_event_record(EventRef event, StreamRef stream) override {
    observe([&] {
      know(stream);
      model.event_record(engine_id(event), engine_id(stream), site("event_record"));
    });
  }
  void on_stream_wait(StreamRef waiter, EventRef event) override {
    observe([&] {
      know(waiter);
      model.stream_wait_event(engine_id(waiter), engine_id(event), site("stream_wait_event"));
    });
  }
  void on_stream_synchronize(StreamRef stream) override { observe([&] { stream_sync(stream, "stream_sync"); }); }
  void on_event_synchronize(EventRef event) override { observe([&] { event_sync(event, "event_sync"); }); }
  /// A successful query is a host synchronization with what it observed.
  void on_stream_query_complete(StreamRef stream) override { observe([&] { stream_sync(stream, "stream_query"); }); }
  void on_event_query_complete(EventRef event) override { observe([&] { event_sync(event, "event_query"); }); }
  void stream_sync(StreamRef stream, std::string_view op_name) {
    know(stream);
    model.stream_sync(engine_id(stream), site(op_name));
  }
  void event_sync(EventRef event, std::string_view op_name) { model.event_sync(engine_id(event), site(op_name)); }
  void on_device_synchronize() override { observe([&] { model.device_sync(site("device_sync")); }); }
};

tracker::tracker(const Device& device, policy mode) : mode_(mode), state_(std::make_shared<state>(device, mode)) {
  state_->know(device.default_stream());
  attach_observer(device, state_);
}

tracker::~tracker() { detach_observer(state_->device, state_.get()); }

policy tracker::mode() const {
  std::lock_guard lock(state_->mutex);
  return state_->model.mode();
}

void tracker::on_hazard(std::function<void(const hazard&)> sink) {
  std::lock_guard lock(state_->mutex);
  state_->sink = std::move(sink);
}

void tracker::throw_on_hazard() {
  on_hazard([](const hazard& found) {
    if (!is_informational(found.kind)) throw usage_error("streamsafe hazard: " + describe(found));
  });
}

std::vector<hazard> tracker::hazards() const {
  std::lock_guard lock(state_->mutex);
  return state_->collected;
}

insertion_counts tracker::inserted() const {
  std::lock_guard lock(state_->mutex);
  return state_->model.inserted();
}

std::size_t tracker::stream_slots() const {
  std::lock_guard lock(state_->mutex);
  return state_->model.stream_slots();
}

std::size_t tracker::events_tracked() const {
  std::lock_guard lock(state_->mutex);
  return state_->model.events_tracked();
}

void tracker::record_to(oplog_writer* log) {
  std::lock_guard lock(state_->mutex);
  state_->model.record_to(log);
}

void tracker::set_record_stream_action(std::function<void(const void*, StreamRef)> action) {
  std::lock_guard lock(state_->mutex);
  state_->record_stream_action = std::move(action);
}

tracked_op tracker::on(StreamRef stream, streamsafe::source_location where) { return tracked_op(*this, stream, where); }

void tracker::host_reads(const void* ptr, std::size_t bytes, streamsafe::source_location where) {
  observed_order_lock order(state_->device);
  std::lock_guard lock(state_->mutex);
  const byte_range range{address(ptr), bytes};
  state_->apply(state_->model.host_access({&range, 1}, {}, state_->site("host_read", where)));
}

void tracker::host_writes(const void* ptr, std::size_t bytes, streamsafe::source_location where) {
  observed_order_lock order(state_->device);
  std::lock_guard lock(state_->mutex);
  const byte_range range{address(ptr), bytes};
  state_->apply(state_->model.host_access({}, {&range, 1}, state_->site("host_write", where)));
}

void tracker::track_alloc(const void* ptr, std::size_t bytes, StreamRef stream, streamsafe::source_location where) {
  observed_order_lock order(state_->device);
  std::lock_guard lock(state_->mutex);
  state_->know(stream);
  state_->model.alloc(address(ptr), bytes, engine_id(stream), state_->site("alloc", where));
}

void tracker::track_free(const void* ptr, streamsafe::source_location where) {
  std::vector<planned_insertion> planned;
  std::function<void(const void*, StreamRef)> record_stream;
  {
    observed_order_lock order(state_->device);
    std::lock_guard lock(state_->mutex);
    planned = state_->plan(state_->model.free(address(ptr), state_->site("free", where)));
    record_stream = state_->record_stream_action;
  }
  // Outside both locks: the allocator's record_stream takes the allocator's lock, which is held
  // around runtime calls that take the observed order. The block is not back in the allocator
  // yet, so nothing can reuse it before these record_streams are made.
  state_->act(planned, record_stream);
}

void tracker::track_record_stream(const void* ptr, StreamRef stream, streamsafe::source_location where) {
  observed_order_lock order(state_->device);
  std::lock_guard lock(state_->mutex);
  state_->know(stream);
  state_->model.record_stream(address(ptr), engine_id(stream), state_->site("record_stream", where));
}

void tracker::track_mapping(const void* ptr, std::size_t bytes, mapping_change change) {
  observed_order_lock order(state_->device);
  std::lock_guard lock(state_->mutex);
  if (change == mapping_change::mapped) {
    state_->model.map(address(ptr), bytes, state_->site("map"));
  } else {
    state_->model.unmap(address(ptr), bytes, state_->site("unmap"));
  }
}

void tracker::submit(const tracked_op& op, std::string_view op_name, const std::function<void()>& enqueue) {
  if (mode_ == policy::off) {  // no tracking: no lock, no lookups
    enqueue();
    return;
  }
  observed_order_lock order(state_->device);
  std::lock_guard lock(state_->mutex);
  state_->know(op.stream_);
  state_->apply(state_->model.access(engine_id(op.stream_), op.reads_.view(), op.writes_.view(),
                                     state_->site(op_name, op.where_)));
  enqueue();
}

void range_list::push_back(byte_range range) {
  if (count_ < inline_.size()) {
    inline_[count_++] = range;
    return;
  }
  if (count_ == inline_.size()) spilled_.assign(inline_.begin(), inline_.end());
  spilled_.push_back(range);
  ++count_;
}

tracked_op& tracked_op::reads(const void* ptr, std::size_t bytes) {
  if (bytes > 0) reads_.push_back({address(ptr), bytes});
  return *this;
}

tracked_op& tracked_op::writes(const void* ptr, std::size_t bytes) {
  if (bytes > 0) writes_.push_back({address(ptr), bytes});
  return *this;
}

void tracked_op::launch(const kernel& work) {
  owner_.submit(*this, work.name, [&] { stream_.launch(work); });
}

void tracked_op::copy(void* dst, const void* src, std::size_t bytes) {
  reads(src, bytes).writes(dst, bytes);
  owner_.submit(*this, "copy", [&] { stream_.copy(dst, src, bytes); });
}

void tracked_op::fill(void* dst, std::uint8_t value, std::size_t bytes) {
  writes(dst, bytes);
  owner_.submit(*this, "fill", [&] { stream_.fill(dst, value, bytes); });
}

}  // namespace streamsafe::hazard
