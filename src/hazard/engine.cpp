// The engine's entry points: each applies one op of GUIDE.md section 3 to the model. The race
// test itself is in detect.hpp; building report text is in report_text.cpp.
#include "streamsafe/hazard/engine.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "hazard/agents.hpp"
#include "hazard/allocations.hpp"
#include "hazard/detect.hpp"
#include "hazard/findings.hpp"
#include "hazard/interval_map.hpp"
#include "hazard/labels.hpp"
#include "hazard/recording.hpp"
#include "hazard/unmapped_bytes.hpp"

namespace streamsafe::hazard {

using namespace detail;

namespace {
struct event_state {
  vector_clock clock;  // a copy of the recording stream's clock at the record
};

/// What makes two findings the same bug: the kind, and the call site and agent of both ops.
/// Agents by slot, not stream id: a stream that takes a destroyed stream's slot shares its
/// reports, so a stream per request that repeats one bug stays one report.
struct site_pair {
  hazard_kind kind{};
  label_id first{};
  label_id second{};
  agent_slot first_agent{};
  agent_slot second_agent{};
  friend bool operator==(const site_pair&, const site_pair&) = default;
};
struct site_pair_hash {
  std::size_t operator()(const site_pair& key) const noexcept {
    const auto first = static_cast<std::uint64_t>(key.first);
    const auto second = static_cast<std::uint64_t>(key.second);
    const auto agents = std::uint64_t{index(key.first_agent)} << 32 | index(key.second_agent);
    return std::hash<std::uint64_t>{}((first << 32 | second) * 8 + static_cast<std::uint64_t>(key.kind)) ^
           std::hash<std::uint64_t>{}(agents) * 31;
  }
};
constexpr std::size_t not_collected = static_cast<std::size_t>(-1);
}  // namespace

struct engine::impl {
  policy mode;
  std::function<void(const hazard&)> sink;
  std::vector<hazard> collected;
  /// Each site pair reported so far: its index in `collected` (not_collected when it went to the
  /// sink) and how often it was found. Bounded by the program's call sites, not its length.
  std::unordered_map<site_pair, std::pair<std::size_t, std::uint64_t>, site_pair_hash> reported;
  insertion_counts counts;
  std::vector<insertion> inserted_now;  // by the current call; what the call returns
  oplog_writer* recorder = nullptr;

  label_table labels;
  agent_table agents;
  std::unordered_map<std::uint64_t, event_state> events;
  allocation_table allocations;
  interval_map<shadow_cell> shadow;
  unmapped_bytes given_back;  // accesses that follow bytes the allocator gave back (unmap, map)
  findings found;

  explicit impl(policy m) : mode(m) {}

  [[nodiscard]] bool tracking() const noexcept { return mode != policy::off; }

  // ---- accesses ----
  // An access is planned (enforce's missing waits, const), the plan applied once carried out,
  // checked (hazards reported, nothing recorded) and committed (recorded), in that order: a
  // sink or a runtime call that throws between two steps leaves no step after it in the model.

  /// An insertion of a plan, with the slot of its producer: exact even where a destroyed
  /// stream's id names a new stream now.
  struct planned_step {
    insertion needed;
    agent_slot producer;
  };
  static void add_step(std::vector<planned_step>& planned, const insertion& needed, agent_slot producer) {
    const auto same = [&](const planned_step& step) { return step.needed == needed; };
    if (std::find_if(planned.begin(), planned.end(), same) == planned.end()) planned.push_back({needed, producer});
  }
  [[nodiscard]] static std::vector<insertion> insertions_of(const std::vector<planned_step>& planned) {
    std::vector<insertion> out;
    out.reserve(planned.size());
    for (const auto& step : planned) out.push_back(step.needed);
    return out;
  }

  /// The clock and slot an access by `stream` is checked with; unseen streams take none yet.
  struct acting_agent {
    agent_slot slot;
    const vector_clock& clock;
  };
  static constexpr agent_slot unseen_slot{~std::uint32_t{0}};  // matches no recorded access

  acting_agent host_agent() const { return acting_agent{host_slot, agents.host_clock()}; }
  acting_agent stream_agent(stream_id stream, vector_clock& scratch) const {
    const auto slot = agents.find(stream);
    if (!slot) return acting_agent{unseen_slot, agents.host_clock()};  // its first op joins the host
    return acting_agent{*slot, agents.clock_at_enqueue(*slot, scratch)};
  }

  // enforce: every agent this access conflicts with gets waited for before the access; for a
  // block used off its allocation stream, that is the allocation stream (after the allocation).
  [[nodiscard]] std::vector<planned_step> plan_waits(const acting_agent& actor, stream_id waiter,
                                                     std::span<const byte_range> reads,
                                                     std::span<const byte_range> writes) const {
    std::vector<planned_step> planned;
    if (mode != policy::enforce) return planned;
    const auto collect = [&](std::span<const byte_range> ranges, access_mode mode_) {
      const current_access access{actor.clock, access_record{actor.slot, label_id{}, epoch{0}, 0, mode_}};
      for (const auto& range : ranges) {
        shadow.visit(range, [&](const shadow_cell& cell, byte_range) {
          find_conflicts(cell, access, [&](hazard_kind kind, const access_record& earlier, const access_record* allocation) {
            if (kind == hazard_kind::use_after_free) return;
            const agent_slot producer = allocation != nullptr ? allocation->agent : earlier.agent;
            const stream_id id = agents.at(producer).id;
            add_step(planned, actor.slot == host_slot ? insertion{insertion_kind::host_sync, {}, id, 0}
                                                      : insertion{insertion_kind::stream_wait, waiter, id, 0},
                     producer);
          });
        });
      }
    };
    collect(reads, access_mode::read);
    collect(writes, access_mode::write);
    return planned;
  }

  /// Hazards of the access as the model stands, reported; the model is not changed.
  void check_as(agent_slot agent, std::span<const byte_range> reads, std::span<const byte_range> writes, op_site site) {
    vector_clock scratch;
    const current_access base{agents.clock_at_enqueue(agent, scratch), access_record{agent, site.label, epoch{0}, site.line, access_mode::read}};
    found.clear();
    const auto check = [&](std::span<const byte_range> ranges, access_mode mode_) {
      current_access access = base;
      access.record.mode = mode_;
      for (const auto& range : ranges) {
        shadow.visit(range, [&](const shadow_cell& cell, byte_range piece) {
          find_conflicts(cell, access, [&](hazard_kind kind, const access_record& earlier, const access_record* allocation) {
            found.note(kind, earlier, mode_, piece, cell.freed_by, allocation);
          });
        });
      }
    };
    check(reads, access_mode::read);
    check(writes, access_mode::write);
    emit_found(agent, site);
  }

  /// Records the access: the op was performed.
  void commit_as(agent_slot agent, std::span<const byte_range> reads, std::span<const byte_range> writes, op_site site) {
    if (agent != host_slot) agents.enqueue(agent);
    const epoch now = agents.at(agent).clock.tick(agent);
    if (agent == host_slot) agents.host_changed();
    for (const auto& range : reads) record(agent, range, access_mode::read, now, site);
    for (const auto& range : writes) record(agent, range, access_mode::write, now, site);
  }

  void record(agent_slot agent, byte_range range, access_mode mode_, epoch now, op_site site) {
    const current_access access{agents.at(agent).clock, access_record{agent, site.label, now, site.line, mode_}};
    shadow.update(range, [&](shadow_cell& cell, byte_range) {
      if (cell.state != lifetime_state::freed) record_access(cell, access);
    });
  }

  // ---- insertions ----

  /// Applies insertions a caller carried out on the runtime, their producers found by id.
  void apply(std::span<const insertion> performed) {
    inserted_now.clear();
    for (const auto& done : performed) apply_one(done, agents.find_any(done.producer));
  }
  /// The same for a plan made in this call (a replay), its producers' slots exact.
  void apply(const std::vector<planned_step>& planned) {
    inserted_now.clear();
    for (const auto& step : planned) apply_one(step.needed, step.producer);
  }

  void apply_one(const insertion& done, std::optional<agent_slot> producer) {
    inserted_now.push_back(done);
    switch (done.kind) {
      case insertion_kind::stream_wait: {
        ++counts.stream_waits;
        const agent_slot waiter = agents.slot_of(done.waiter);
        agents.enqueue(waiter);
        if (producer) agents.at(waiter).clock.join(agents.at(*producer).clock);
        return;
      }
      case insertion_kind::host_sync:
        ++counts.host_syncs;
        if (producer) host_joins(agents.at(*producer).clock);
        return;
      case insertion_kind::record_stream:
        ++counts.record_streams;
        // A stream that left the model had all its work seen finished: the release covers it.
        if (producer) record_stream_on(done.block, *producer);
        return;
    }
  }

  // ---- lifetimes ----

  /// The release point of `block` as it stands: what the next allocation's stream follows.
  [[nodiscard]] vector_clock release_of(const allocation& block) const {
    vector_clock release = agents.host_clock();  // host ops before the free precede any reuse
    release.join(agents.at(block.stream).clock);
    for (const agent_slot stream : block.recorded) release.join(agents.at(stream).clock);
    return release;
  }

  // enforce: every stream that touched the block and is not covered gets recorded on it.
  [[nodiscard]] std::vector<planned_step> plan_records(std::uint64_t ptr) const {
    const allocation& block = allocations.starting_at(ptr);
    std::vector<planned_step> planned;
    if (mode != policy::enforce) return planned;
    const vector_clock release = release_of(block);
    const auto note_uncovered = [&](const access_record& old) {
      if (release.covers(old.agent, old.time)) return;
      add_step(planned, insertion{insertion_kind::record_stream, {}, agents.at(old.agent).id, block.first}, old.agent);
    };
    shadow.visit(block.bytes(), [&](const shadow_cell& cell, byte_range) {
      if (cell.write) note_uncovered(*cell.write);
      cell.reads.for_each(note_uncovered);
    });
    return planned;
  }

  /// Ends the lifetime at `ptr` with the records it has; inserts nothing.
  void commit_free(std::uint64_t ptr, op_site site) {
    const allocation& block = allocations.starting_at(ptr);
    const vector_clock release = release_of(block);
    const free_record freed{site.label, site.line, ptr};
    const release_point point{release, agents.host_clock()};
    shadow.update(block.bytes(), [&](shadow_cell& cell, byte_range) { retire(cell, point, freed); });
    agents.release(block.stream);
    for (const agent_slot stream : block.recorded) agents.release(stream);
    allocations.remove(ptr);
  }

  // Bytes that keep old-lifetime accesses get the allocation as an op of its stream: the release
  // point orders that stream's later ops, and whatever is ordered after this op, nothing else.
  void alloc_block(std::uint64_t ptr, std::uint64_t size, agent_slot stream, op_site site) {
    const allocation& block = allocations.add(ptr, size, stream);
    agents.hold(stream);
    std::optional<access_record> allocated;
    shadow.update(block.bytes(), [&](shadow_cell& cell, byte_range) {
      cell.state = lifetime_state::live;
      if (cell.retired.empty()) return;
      if (!allocated) allocated = allocation_op(stream, site);
      cell.allocated = allocated;
    });
  }

  [[nodiscard]] access_record allocation_op(agent_slot stream, op_site site) {
    agents.enqueue(stream);
    return access_record{stream, site.label, agents.at(stream).clock.tick(stream), site.line, access_mode::write};
  }

  void record_stream_on(std::uint64_t ptr, agent_slot stream) {
    allocation& block = allocations.containing(ptr);
    if (std::find(block.recorded.begin(), block.recorded.end(), stream) == block.recorded.end()) {
      block.recorded.push_back(stream);
      agents.hold(stream);
    }
  }

  // ---- events and syncs ----

  /// `findings`: whether a wait that does nothing is the program's (stream_wait_event) or the
  /// runtime's own ordering (join_event), which reports nothing.
  enum class wait_findings : bool { none, reported };
  void wait(agent_slot stream, event_id event, op_site site, wait_findings findings = wait_findings::reported) {
    agents.enqueue(stream);
    const bool report = findings == wait_findings::reported;
    auto it = events.find(static_cast<std::uint64_t>(event));
    if (it == events.end()) {
      if (report) emit_wait_finding(hazard_kind::wait_unrecorded, stream, event, site);
      return;
    }
    auto& clock = agents.at(stream).clock;
    if (clock.includes(it->second.clock)) {
      if (report) emit_wait_finding(hazard_kind::redundant_wait, stream, event, site);
      return;
    }
    clock.join(it->second.clock);
  }

  void host_joins(const vector_clock& clock) {
    agents.host_clock().join(clock);
    agents.host_changed();
  }

  // ---- reports ----

  [[nodiscard]] op_ref resolve(const access_record& record, op_role role) const {
    return op_ref{record.line, std::string(labels.op_name(record.label)), agents.display_name(record.agent),
                  std::string(labels.loc(record.label)), role};
  }

  [[nodiscard]] static op_role role_of(access_mode mode_) noexcept {
    return mode_ == access_mode::write ? op_role::write : op_role::read;
  }

  void emit_found(agent_slot agent, op_site site) {
    for (const auto& f : found.all()) {
      const site_pair key{f.kind, f.first.label, site.label, f.first.agent, agent};
      if (is_repeat(key)) continue;
      hazard report;
      report.kind = f.kind;
      const bool after_free = f.kind == hazard_kind::use_after_free;
      report.first = resolve(f.first, after_free ? op_role::free : role_of(f.first.mode));
      report.second = resolve(access_record{agent, site.label, epoch{0}, site.line, f.second_mode}, role_of(f.second_mode));
      report.range = f.range;
      if (after_free || f.kind == hazard_kind::reuse_race) {
        report.block = f.freed_by.block;
        report.free_op = resolve(as_access(f.freed_by), op_role::free);
      }
      if (f.allocation) report.alloc_op = resolve(*f.allocation, op_role::write);
      emit(report, key);
    }
  }

  void emit_wait_finding(hazard_kind kind, agent_slot stream, event_id event, op_site site) {
    const site_pair key{kind, site.label, site.label, stream, stream};
    if (is_repeat(key)) return;
    hazard report;
    report.kind = kind;
    report.first = resolve(access_record{stream, site.label, epoch{0}, site.line, access_mode::read}, op_role::wait);
    report.second = report.first;
    report.event = static_cast<std::uint64_t>(event);
    emit(report, key);
  }

  // A repeated bug is counted, not reported again: a long run's memory stays bounded. True when
  // the site pair was reported before (its count is raised).
  bool is_repeat(const site_pair& key) {
    auto [it, first_time] = reported.try_emplace(key, not_collected, 0);
    auto& [index, count] = it->second;
    ++count;
    if (!first_time && index != not_collected) collected[index].count = count;
    return !first_time;
  }

  void emit(const hazard& report, const site_pair& key) {
    if (sink) {
      sink(report);
      return;
    }
    reported.at(key).first = collected.size();
    collected.push_back(report);
  }

};

engine::engine(policy mode) : impl_(std::make_unique<impl>(mode)) {}
engine::~engine() = default;
engine::engine(engine&&) noexcept = default;
engine& engine::operator=(engine&&) noexcept = default;

policy engine::mode() const noexcept { return impl_->mode; }
void engine::set_mode(policy mode) noexcept { impl_->mode = mode; }
void engine::on_hazard(std::function<void(const hazard&)> sink) { impl_->sink = std::move(sink); }
const std::vector<hazard>& engine::hazards() const noexcept { return impl_->collected; }
const insertion_counts& engine::inserted() const noexcept { return impl_->counts; }
void engine::record_to(oplog_writer* log) noexcept { impl_->recorder = log; }
std::size_t engine::shadow_segments() const noexcept { return impl_->shadow.size(); }
std::size_t engine::unmapped_segments() const noexcept { return impl_->given_back.size(); }
std::size_t engine::stream_slots() const noexcept { return impl_->agents.size() - 1; }
std::size_t engine::events_tracked() const noexcept { return impl_->events.size(); }

label_id engine::label(std::string_view op_name, std::string_view loc) { return impl_->labels.intern(op_name, loc); }

void engine::name_stream(stream_id stream, std::string_view name) {
  impl_->agents.at(impl_->agents.slot_of(stream)).name = std::string(name);
  record_op(impl_->recorder, stream_op(stream, name));
}

void engine::alloc(std::uint64_t ptr, std::uint64_t size, stream_id stream, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, alloc_op(ptr, size, stream, impl_->labels.loc(site.label)));
  impl_->alloc_block(ptr, size, impl_->agents.slot_of(stream), site);
}

std::vector<insertion> engine::plan_free(std::uint64_t ptr) const {
  if (!impl_->tracking()) return {};
  return impl::insertions_of(impl_->plan_records(ptr));
}

void engine::commit_free(std::uint64_t ptr, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, free_op(ptr, impl_->labels.loc(site.label)));
  impl_->commit_free(ptr, site);
}

std::span<const insertion> engine::free(std::uint64_t ptr, op_site site) {
  if (!impl_->tracking()) return {};
  impl_->apply(impl_->plan_records(ptr));
  commit_free(ptr, site);
  return impl_->inserted_now;
}

void engine::record_stream(std::uint64_t ptr, stream_id stream, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, record_stream_op(ptr, stream, impl_->labels.loc(site.label)));
  impl_->record_stream_on(ptr, impl_->agents.slot_of(stream));
}

void engine::unmap(std::uint64_t ptr, std::uint64_t size, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, range_op(op_kind::unmap, ptr, size, impl_->labels.loc(site.label)));
  impl_->given_back.take(impl_->shadow, {ptr, size}, impl_->agents.host_clock());
}

void engine::map(std::uint64_t ptr, std::uint64_t size, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, range_op(op_kind::map, ptr, size, impl_->labels.loc(site.label)));
  impl_->given_back.give(impl_->shadow, {ptr, size}, impl_->agents.host_clock());
}

std::vector<insertion> engine::plan_access(stream_id stream, std::span<const byte_range> reads,
                                           std::span<const byte_range> writes) const {
  if (!impl_->tracking()) return {};
  vector_clock scratch;
  return impl::insertions_of(impl_->plan_waits(impl_->stream_agent(stream, scratch), stream, reads, writes));
}

std::vector<insertion> engine::plan_host_access(std::span<const byte_range> reads,
                                                std::span<const byte_range> writes) const {
  if (!impl_->tracking()) return {};
  return impl::insertions_of(impl_->plan_waits(impl_->host_agent(), stream_id{}, reads, writes));
}

void engine::apply(std::span<const insertion> performed) {
  if (!impl_->tracking()) return;
  impl_->apply(performed);
}

void engine::check_access(stream_id stream, std::span<const byte_range> reads, std::span<const byte_range> writes,
                          op_site site) {
  if (!impl_->tracking()) return;
  impl_->check_as(impl_->agents.slot_of(stream), reads, writes, site);
}

void engine::check_host_access(std::span<const byte_range> reads, std::span<const byte_range> writes, op_site site) {
  if (!impl_->tracking()) return;
  impl_->check_as(host_slot, reads, writes, site);
}

void engine::commit_access(stream_id stream, std::span<const byte_range> reads, std::span<const byte_range> writes,
                           op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, kernel_op(stream, impl_->labels.op_name(site.label), reads, writes, impl_->labels.loc(site.label)));
  impl_->commit_as(impl_->agents.slot_of(stream), reads, writes, site);
}

void engine::commit_host_access(std::span<const byte_range> reads, std::span<const byte_range> writes, op_site site) {
  if (!impl_->tracking()) return;
  record_host_access(impl_->recorder, reads, writes, impl_->labels.loc(site.label));
  impl_->commit_as(host_slot, reads, writes, site);
}

// Without a runtime to act on (a replay), the plan is applied as made.
std::span<const insertion> engine::access(stream_id stream, std::span<const byte_range> reads,
                                          std::span<const byte_range> writes, op_site site) {
  if (!impl_->tracking()) return {};
  vector_clock scratch;
  impl_->apply(impl_->plan_waits(impl_->stream_agent(stream, scratch), stream, reads, writes));
  check_access(stream, reads, writes, site);
  commit_access(stream, reads, writes, site);
  return impl_->inserted_now;
}

std::span<const insertion> engine::host_access(std::span<const byte_range> reads, std::span<const byte_range> writes,
                                               op_site site) {
  if (!impl_->tracking()) return {};
  impl_->apply(impl_->plan_waits(impl_->host_agent(), stream_id{}, reads, writes));
  check_host_access(reads, writes, site);
  commit_host_access(reads, writes, site);
  return impl_->inserted_now;
}

void engine::event_record(event_id event, stream_id stream, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, event_record_op(event, stream, impl_->labels.loc(site.label)));
  const agent_slot slot = impl_->agents.slot_of(stream);
  impl_->agents.enqueue(slot);
  impl_->events[static_cast<std::uint64_t>(event)].clock = impl_->agents.at(slot).clock;
}

void engine::stream_wait_event(stream_id stream, event_id event, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, stream_wait_event_op(stream, event, impl_->labels.loc(site.label)));
  impl_->wait(impl_->agents.slot_of(stream), event, site);
}

void engine::join_event(stream_id stream, event_id event, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, stream_wait_event_op(stream, event, impl_->labels.loc(site.label)));
  impl_->wait(impl_->agents.slot_of(stream), event, site, impl::wait_findings::none);
}

void engine::event_sync(event_id event, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, event_only_op(op_kind::event_sync, event, impl_->labels.loc(site.label)));
  auto it = impl_->events.find(static_cast<std::uint64_t>(event));
  if (it == impl_->events.end()) {
    impl_->emit_wait_finding(hazard_kind::wait_unrecorded, host_slot, event, site);
    return;
  }
  impl_->host_joins(it->second.clock);
}

void engine::stream_sync(stream_id stream, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, stream_only_op(op_kind::stream_sync, stream, impl_->labels.loc(site.label)));
  impl_->host_joins(impl_->agents.at(impl_->agents.slot_of(stream)).clock);
}

void engine::tag_device(stream_id stream, std::uint32_t device) {
  if (!impl_->tracking()) return;
  impl_->agents.at(impl_->agents.slot_of(stream)).device = device;
}

void engine::device_sync(std::uint32_t device, op_site site) {
  if (!impl_->tracking()) return;
  for (std::uint32_t i = 1; i < impl_->agents.size(); ++i) {
    const detail::agent_state& agent = impl_->agents.at(agent_slot{i});
    if (agent.device != device) continue;
    record_op(impl_->recorder, stream_only_op(op_kind::stream_sync, agent.id, impl_->labels.loc(site.label)));
    impl_->agents.host_clock().join(agent.clock);
  }
  impl_->agents.host_changed();
}

void engine::stream_destroy(stream_id stream, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, stream_only_op(op_kind::stream_destroy, stream, impl_->labels.loc(site.label)));
  impl_->agents.destroy(stream);
}

void engine::event_destroy(event_id event, op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, event_only_op(op_kind::event_destroy, event, impl_->labels.loc(site.label)));
  impl_->events.erase(static_cast<std::uint64_t>(event));
}

void engine::device_sync(op_site site) {
  if (!impl_->tracking()) return;
  record_op(impl_->recorder, device_sync_op(impl_->labels.loc(site.label)));
  for (std::uint32_t i = 1; i < impl_->agents.size(); ++i) impl_->agents.host_clock().join(impl_->agents.at(agent_slot{i}).clock);
  impl_->agents.host_changed();
}

}  // namespace streamsafe::hazard
