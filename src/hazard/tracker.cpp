// The engine on a live device. An observer keeps the engine's clocks in step with the runtime;
// tracked ops are checked before they are enqueued. `enforce` is a transaction: the engine plans
// the insertions (its model unchanged), the tracker carries them out on the runtime with pooled
// events, and only then are they applied and the op checked, enqueued and committed, so nothing
// that throws on the way leaves the model ahead of the runtime. While a tracker acts, its own
// observer skips the callbacks of its insertions (the plan says them already); other trackers
// and other threads are not affected. Every entry point takes the device's observed order first
// and the tracker's lock second (the order callbacks arrive in), so a tracked op's check,
// insertions and enqueue are one step of the runtime's order.
#include "streamsafe/hazard/tracker.hpp"

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/expects.hpp"
#include "streamsafe/event_pool.hpp"
#include "streamsafe/hazard/engine.hpp"
#include "streamsafe/hazard/report_text.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/stream_impl.hpp"
#include "runtime/unique_id.hpp"
#include "streamsafe/runtime_observer.hpp"

namespace streamsafe::hazard {

namespace {

/// The trackers this thread is carrying insertions out for, innermost last.
thread_local std::vector<const void*> acting_trackers;

/// Marks this thread as acting for one tracker while it lives.
class acting_scope {
 public:
  explicit acting_scope(const void* tracker) { acting_trackers.push_back(tracker); }
  ~acting_scope() { acting_trackers.pop_back(); }
  acting_scope(const acting_scope&) = delete;
  acting_scope& operator=(const acting_scope&) = delete;
};

/// Erases the entries `done` says are finished once `map` has doubled since the last sweep (plus
/// a little): amortized O(1) per insertion, and `map` stays within about twice what is live.
template <typename Map, typename Done>
void sweep_when_doubled(Map& map, std::size_t& kept_at_last_sweep, Done&& done) {
  constexpr std::size_t slack = 8;
  if (map.size() < 2 * kept_at_last_sweep + slack) return;
  std::erase_if(map, done);
  kept_at_last_sweep = map.size();
}

[[nodiscard]] bool is_acting(const void* tracker) {
  return std::find(acting_trackers.begin(), acting_trackers.end(), tracker) != acting_trackers.end();
}

stream_id engine_id(StreamRef stream) { return stream_id{static_cast<std::uint64_t>(stream.id())}; }
event_id engine_id(EventRef event) { return event_id{static_cast<std::uint64_t>(event.id())}; }
std::uint64_t address(const void* ptr) { return reinterpret_cast<std::uint64_t>(ptr); }

/// The engine calls of one tracked access by a stream (see tracker::state::transact).
struct stream_access {
  stream_id stream;
  std::span<const byte_range> reads;
  std::span<const byte_range> writes;
  op_site site;
  [[nodiscard]] std::vector<insertion> plan(const engine& model) const { return model.plan_access(stream, reads, writes); }
  void check(engine& model) const { model.check_access(stream, reads, writes, site); }
  void commit(engine& model) const { model.commit_access(stream, reads, writes, site); }
};

/// The same by the host.
struct host_access {
  std::span<const byte_range> reads;
  std::span<const byte_range> writes;
  op_site site;
  [[nodiscard]] std::vector<insertion> plan(const engine& model) const { return model.plan_host_access(reads, writes); }
  void check(engine& model) const { model.check_host_access(reads, writes, site); }
  void commit(engine& model) const { model.commit_host_access(reads, writes, site); }
};

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

/// One part of a collective: the stream it was enqueued on, and the engine event that holds
/// the stream's clock as the part arrived.
struct collective_part {
  stream_id stream;
  event_id arrival;
};

/// Everything a tracker shares with its observer, under one lock.
struct tracker::state final : RuntimeObserver {
  state(std::vector<Device> devices_in, policy mode)
      : devices(std::move(devices_in)), model(mode), events(devices.front()) {
    model.on_hazard([this](const hazard& found) { deliver(found); });
  }

  std::vector<Device> devices;
  std::recursive_mutex mutex;
  streamsafe::hazard::engine model;
  EventPool events;
  std::unordered_map<std::uint64_t, known_stream> streams;  // live handles, by runtime stream id
  // Destroyed handles whose work may still be pending: kept until it is seen done.
  std::unordered_map<std::uint64_t, known_stream> retired_streams;
  // Destroyed handles whose impl another holder keeps alive (an allocator's share): the runtime's
  // ops on them are theirs, and the engine is told of their end once the impl is gone. Weak: the
  // tracker does not keep them alive.
  std::unordered_map<std::uint64_t, std::weak_ptr<detail::StreamImpl>> destroyed;
  std::function<void(const void*, StreamRef)> record_stream_action;
  std::function<void(const hazard&)> sink;  // null: collect
  std::vector<hazard> collected;
  std::uint64_t ops = 0;
  // Collectives some of whose parts have arrived, by (group, sequence), and how many parts of
  // each group each device has issued (its next part's sequence).
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<collective_part>> collectives;
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::uint64_t> parts_issued;
  /// A collective whose other parts are this many sequences behind the newest part of its group
  /// is given up: it orders nothing (which can add reports, never hide one), and a group whose
  /// other ranks this tracker does not see keeps at most this many.
  static constexpr std::uint64_t collective_window = 64;

  [[nodiscard]] bool several_devices() const noexcept { return devices.size() > 1; }

  /// The observed order a call takes: its device's. Over several devices, the device of the
  /// op's stream, and none for a call without a stream: a rank's host thread may hold its
  /// device's order inside a synchronization that waits for another rank's collective, and
  /// that rank's thread must not wait for it to reach the engine.
  [[nodiscard]] std::optional<observed_order_lock> order_for(const StreamRef* stream) const {
    if (!several_devices()) return std::optional<observed_order_lock>(std::in_place, devices.front());
    if (stream != nullptr) return std::optional<observed_order_lock>(std::in_place, stream->device());
    return std::nullopt;
  }

  /// The engine reports each (kind, pair of call sites and agents) once: a live program that
  /// repeats a bug every iteration gets one report, and memory stays bounded.
  void deliver(const hazard& found) {
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

  /// Registers a stream on first sight. One whose handle was destroyed is not taken back: the
  /// runtime still makes calls on it (an allocator's fence or query), and they are its own.
  void know(StreamRef stream) {
    const auto id = static_cast<std::uint64_t>(stream.id());
    if (streams.contains(id) || destroyed.contains(id)) return;
    streams.emplace(id, known_stream{stream, stream.impl().weak_from_this().lock()});
    model.name_stream(engine_id(stream), stream.name());
    if (several_devices()) model.tag_device(engine_id(stream), device_number(stream.device()));
  }

  /// 1 + the device's place among the tracker's devices; 0 for another device.
  [[nodiscard]] std::uint32_t device_number(const Device& device) const {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (devices[i] == device) return static_cast<std::uint32_t>(i + 1);
    }
    return 0;
  }

  /// The tracker's side of a stream's end: its handle is gone, but `enforce` may still have to
  /// wait for or record work it enqueued, so the stream is kept until that work is done. The
  /// engine is told once no runtime call can name the stream any more (a later op naming its id
  /// would be a new stream's): at once when the tracker holds the last share, else when the
  /// other holders (an allocator's pool, a pending free) have let it go.
  void forget_stream(streamsafe::stream_id id) {
    auto node = streams.extract(static_cast<std::uint64_t>(id));
    if (node.empty() || !node.mapped().keep || node.mapped().keep.use_count() == 1) {
      model.stream_destroy(stream_id{static_cast<std::uint64_t>(id)}, site("stream_destroy"));
    } else {
      remember_destroyed(node.key(), node.mapped().keep);
    }
    // A destroyed stream gets no new work: once its queue is seen empty it never needs acting on.
    if (node.empty() || !node.mapped().keep || seen_idle(node.key(), *node.mapped().keep)) return;
    sweep_when_doubled(retired_streams, retired_kept,
                       [](const auto& entry) { return seen_idle(entry.first, *entry.second.keep); });
    retired_streams.emplace(node.key(), std::move(node.mapped()));
  }
  std::size_t retired_kept = 0;
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

  void remember_destroyed(std::uint64_t id, const std::shared_ptr<detail::StreamImpl>& impl) {
    sweep_when_doubled(destroyed, destroyed_kept, [&](const auto& entry) {
      if (!entry.second.expired()) return false;
      model.stream_destroy(stream_id{entry.first}, site("stream_destroy"));
      return true;
    });
    destroyed.emplace(id, impl);
  }
  std::size_t destroyed_kept = 0;

  /// The stream to act on, or none when it was destroyed and its work is done (nothing to do).
  std::optional<known_stream> stream_of(stream_id id) const {
    const auto key = static_cast<std::uint64_t>(id);
    if (auto it = streams.find(key); it != streams.end()) return it->second;
    if (auto it = retired_streams.find(key); it != retired_streams.end()) return it->second;
    return std::nullopt;
  }

  /// `enforce`, first step: the engine's plan, resolved to the streams that carry it out.
  /// Insertions for streams whose work is already done are dropped.
  std::vector<planned_insertion> resolve(std::span<const insertion> insertions) const {
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
  /// `record_stream`, the allocator's action); this tracker's observer skips the callbacks, as
  /// the model is told by applying the plan. May throw: the model has not been told yet.
  void act(std::span<const planned_insertion> planned,
           const std::function<void(const void*, StreamRef)>& record_stream) {
    if (planned.empty()) return;
    const acting_scope acting(this);
    for (const auto& step : planned) act_one(step, record_stream);
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

  /// One tracked access as a transaction (the caller holds the observed order and the lock):
  /// plan, act, apply, check (the sink may throw), perform the op, commit. Whatever throws, the
  /// model holds only what the runtime did. `side` names the engine calls of the acting agent.
  template <typename Side, typename Perform>
  void transact(const Side& side, Perform&& perform) {
    const std::vector<insertion> planned = side.plan(model);
    act(resolve(planned), record_stream_action);
    model.apply(planned);
    side.check(model);
    perform();
    side.commit(model);
  }

  /// A host access: one step of the observed order, nothing to enqueue.
  void host(host_access access, std::string_view op_name, const streamsafe::source_location& where) {
    const auto order = order_for(nullptr);
    std::lock_guard lock(mutex);
    access.site = site(op_name, where);
    transact(access, [] {});
  }

  // RuntimeObserver: keep the engine's clocks in step with the runtime.
  template <typename Update>
  void observe(Update&& update) {
    if (is_acting(this)) return;
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

  /// Over several devices: a device's synchronization is one with that device's streams only
  /// (destroyed ones whose work the engine still keeps included).
  void device_synchronized(std::uint32_t device) { observe([&] { model.device_sync(device, site("device_sync")); }); }

  /// A part of a collective of `group` arrived on `stream`: the k-th part a device issues in a
  /// group meets every other device's k-th. Once the parts of `parts_expected` devices are in,
  /// each part's stream joins every other part's arrival clock.
  void collective(StreamRef stream, std::uint64_t group, std::size_t parts_expected, op_site arrived) {
    const std::uint32_t device = device_number(stream.device());
    SS_EXPECTS(device != 0, "hazard tracker: collective of group ", group, " on stream '", stream.name(), "' of ",
               stream.device().name(), ", which is not one of the tracker's devices");
    know(stream);
    const std::uint64_t sequence = parts_issued[{group, device}]++;
    give_up_collectives_before(group, sequence);
    const event_id arrival{static_cast<std::uint64_t>(detail::next_unique_id<streamsafe::event_id>())};
    model.event_record(arrival, engine_id(stream), arrived);
    const auto entry = collectives.try_emplace({group, sequence}).first;
    std::vector<collective_part>& parts = entry->second;
    parts.push_back({engine_id(stream), arrival});
    if (parts.size() < parts_expected) return;
    const op_site completed = site("collective_complete");
    for (const collective_part& waiter : parts) {
      for (const collective_part& other : parts) {
        if (other.arrival != waiter.arrival) model.join_event(waiter.stream, other.arrival, completed);
      }
    }
    forget_collective(entry, completed);
  }

  void give_up_collectives_before(std::uint64_t group, std::uint64_t sequence) {
    if (sequence < collective_window) return;
    const op_site given_up = site("collective_given_up");
    auto it = collectives.lower_bound({group, 0});
    while (it != collectives.end() && it->first.first == group && it->first.second <= sequence - collective_window) {
      it = forget_collective(it, given_up);
    }
  }

  template <typename Iterator>
  Iterator forget_collective(Iterator it, op_site site_of_end) {
    for (const collective_part& part : it->second) model.event_destroy(part.arrival, site_of_end);
    return collectives.erase(it);
  }
};

namespace {

/// One device's callbacks, for a tracker over several: the same as the tracker's own, except
/// that a device synchronization names its device.
class device_view final : public RuntimeObserver {
 public:
  device_view(std::shared_ptr<tracker::state> owner, std::uint32_t device) : owner_(std::move(owner)), device_(device) {}
  void on_stream_created(StreamRef stream) override { owner_->on_stream_created(stream); }
  void on_stream_destroyed(streamsafe::stream_id id) override { owner_->on_stream_destroyed(id); }
  void on_event_destroyed(streamsafe::event_id id) override { owner_->on_event_destroyed(id); }
  void on_event_record(EventRef event, StreamRef stream) override { owner_->on_event_record(event, stream); }
  void on_stream_wait(StreamRef waiter, EventRef event) override { owner_->on_stream_wait(waiter, event); }
  void on_stream_synchronize(StreamRef stream) override { owner_->on_stream_synchronize(stream); }
  void on_event_synchronize(EventRef event) override { owner_->on_event_synchronize(event); }
  void on_stream_query_complete(StreamRef stream) override { owner_->on_stream_query_complete(stream); }
  void on_event_query_complete(EventRef event) override { owner_->on_event_query_complete(event); }
  void on_device_synchronize() override { owner_->device_synchronized(device_); }

 private:
  std::shared_ptr<tracker::state> owner_;
  std::uint32_t device_;  // its number in the tracker (1 + its place)
};

std::vector<Device> checked_devices(std::span<const Device> devices, policy mode) {
  SS_EXPECTS(!devices.empty(), "hazard tracker: needs at least one device");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      SS_EXPECTS(!(devices[i] == devices[j]), "hazard tracker: device ", devices[i].name(), " is given twice");
    }
  }
  for (const Device& device : devices) {
    if (devices.size() > 1 && device.impl().runs_work_on_callers()) {
      throw usage_error("hazard tracker: a tracker over several devices needs threaded sim devices, and " + device.name() +
                        " is not: deterministic sim runs a rank's queued collective on the thread that waits, "
                        "which may hold the engine's lock the other ranks need to issue theirs");
    }
  }
  if (devices.size() > 1 && mode == policy::enforce) {
    throw usage_error("hazard tracker: enforce needs a tracker of one device (one over " + std::to_string(devices.size()) +
                      " devices reports: inserting a wait on one device while another's calls wait for the engine "
                      "could deadlock); use report or one tracker per device");
  }
  return {devices.begin(), devices.end()};
}

}  // namespace

tracker::tracker(const Device& device, policy mode) : tracker(std::span<const Device>(&device, 1), mode) {}

tracker::tracker(std::span<const Device> devices, policy mode)
    : mode_(mode), state_(std::make_shared<state>(checked_devices(devices, mode), mode)) {
  for (const Device& device : state_->devices) state_->know(device.default_stream());
  if (!state_->several_devices()) {
    attach_observer(state_->devices.front(), state_);
    return;
  }
  for (std::size_t i = 0; i < state_->devices.size(); ++i) {
    views_.push_back(std::make_shared<device_view>(state_, static_cast<std::uint32_t>(i + 1)));
    attach_observer(state_->devices[i], views_.back());
  }
}

tracker::~tracker() {
  if (views_.empty()) {
    detach_observer(state_->devices.front(), state_.get());
    return;
  }
  for (std::size_t i = 0; i < views_.size(); ++i) detach_observer(state_->devices[i], views_[i].get());
}

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
  const byte_range range{address(ptr), bytes};
  state_->host(host_access{{&range, 1}, {}, {}}, "host_read", where);
}

void tracker::host_writes(const void* ptr, std::size_t bytes, streamsafe::source_location where) {
  const byte_range range{address(ptr), bytes};
  state_->host(host_access{{}, {&range, 1}, {}}, "host_write", where);
}

void tracker::track_alloc(const void* ptr, std::size_t bytes, StreamRef stream, streamsafe::source_location where) {
  const auto order = state_->order_for(&stream);
  std::lock_guard lock(state_->mutex);
  state_->know(stream);
  state_->model.alloc(address(ptr), bytes, engine_id(stream), state_->site("alloc", where));
}

// The free's transaction. Acting runs outside both locks: the allocator's record_stream takes
// the allocator's lock, which is held around runtime calls that take the observed order. The
// block is not back in the allocator yet, so nothing can reuse it before these record_streams
// are made; if one throws, the engine has not freed the block either, so the caller may free it
// again. Between plan and commit another thread's op on the block would be the program's race
// with its own free; its clock joins at apply, as the plan's streams' do.
void tracker::track_free(const void* ptr, streamsafe::source_location where) {
  std::vector<insertion> needed;
  std::vector<planned_insertion> planned;
  std::function<void(const void*, StreamRef)> record_stream;
  {
    const auto order = state_->order_for(nullptr);
    std::lock_guard lock(state_->mutex);
    needed = state_->model.plan_free(address(ptr));  // throws for a pointer that is not live
    planned = state_->resolve(needed);
    record_stream = state_->record_stream_action;
  }
  state_->act(planned, record_stream);
  const auto order = state_->order_for(nullptr);
  std::lock_guard lock(state_->mutex);
  state_->model.apply(needed);
  state_->model.commit_free(address(ptr), state_->site("free", where));
}

void tracker::track_record_stream(const void* ptr, StreamRef stream, streamsafe::source_location where) {
  const auto order = state_->order_for(&stream);
  std::lock_guard lock(state_->mutex);
  state_->know(stream);
  state_->model.record_stream(address(ptr), engine_id(stream), state_->site("record_stream", where));
}

void tracker::track_mapping(const void* ptr, std::size_t bytes, mapping_change change) {
  const auto order = state_->order_for(nullptr);
  std::lock_guard lock(state_->mutex);
  if (change == mapping_change::mapped) {
    state_->model.map(address(ptr), bytes, state_->site("map"));
  } else {
    state_->model.unmap(address(ptr), bytes, state_->site("unmap"));
  }
}

void tracker::track_collective(StreamRef stream, std::uint64_t group, std::size_t ranks,
                               streamsafe::source_location where) {
  SS_EXPECTS(ranks >= 1, "hazard tracker: a collective of group ", group, " needs at least one rank");
  const std::size_t parts_expected = std::min(ranks, state_->devices.size());
  if (mode_ == policy::off || parts_expected < 2) return;  // no other part here to order against
  const auto order = state_->order_for(&stream);
  std::lock_guard lock(state_->mutex);
  state_->collective(stream, group, parts_expected, state_->site("collective", where));
}

void tracker::submit(const tracked_op& op, std::string_view op_name, const std::function<void()>& enqueue) {
  if (mode_ == policy::off) {  // no tracking: no lock, no lookups
    enqueue();
    return;
  }
  const auto order = state_->order_for(&op.stream_);
  std::lock_guard lock(state_->mutex);
  state_->know(op.stream_);
  state_->transact(stream_access{engine_id(op.stream_), op.reads_.view(), op.writes_.view(), state_->site(op_name, op.where_)},
                   enqueue);
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
