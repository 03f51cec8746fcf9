// The engine's entry points: each applies one op of GUIDE.md section 3 to the model. The race
// test itself is in detect.hpp; building report text is in report_text.cpp.
#include "streamsafe/hazard/engine.hpp"

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

/// What makes two findings the same bug: the kind and the call sites of both ops.
struct site_pair {
  hazard_kind kind{};
  label_id first{};
  label_id second{};
  friend bool operator==(const site_pair&, const site_pair&) = default;
};
struct site_pair_hash {
  std::size_t operator()(const site_pair& key) const noexcept {
    const auto first = static_cast<std::uint64_t>(key.first);
    const auto second = static_cast<std::uint64_t>(key.second);
    return std::hash<std::uint64_t>{}((first << 32 | second) * 8 + static_cast<std::uint64_t>(key.kind));
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

  std::span<const insertion> access_as(agent_slot agent, std::span<const byte_range> reads,
                                       std::span<const byte_range> writes, op_site site) {
    inserted_now.clear();
    if (agent != host_slot) agents.enqueue(agent);
    const epoch now = agents.at(agent).clock.tick(agent);
    if (agent == host_slot) agents.host_changed();
    if (mode == policy::enforce) insert_missing_waits(agent, reads, writes, now);
    found.clear();
    for (const auto& range : reads) touch(agent, range, access_mode::read, now, site);
    for (const auto& range : writes) touch(agent, range, access_mode::write, now, site);
    emit_found(agent, site);
    return inserted_now;
  }

  void touch(agent_slot agent, byte_range range, access_mode mode_, epoch now, op_site site) {
    const current_access access{agents.at(agent).clock, access_record{agent, site.label, now, site.line, mode_}};
    shadow.update(range, [&](shadow_cell& cell, byte_range piece) {
      find_conflicts(cell, access, [&](hazard_kind kind, const access_record& earlier, const access_record* allocation) {
        found.note(kind, earlier, mode_, piece, cell.freed_by, allocation);
      });
      if (cell.state != lifetime_state::freed) record_access(cell, access);
    });
  }

  // enforce: every agent this access conflicts with gets waited for before the access; for a
  // block used off its allocation stream, that is the allocation stream (after the allocation).
  void insert_missing_waits(agent_slot agent, std::span<const byte_range> reads, std::span<const byte_range> writes,
                            epoch now) {
    std::vector<agent_slot> producers;
    const auto collect = [&](std::span<const byte_range> ranges, access_mode mode_) {
      const current_access access{agents.at(agent).clock, access_record{agent, label_id{}, now, 0, mode_}};
      for (const auto& range : ranges) {
        shadow.visit(range, [&](const shadow_cell& cell, byte_range) {
          find_conflicts(cell, access, [&](hazard_kind kind, const access_record& earlier, const access_record* allocation) {
            const agent_slot producer = allocation != nullptr ? allocation->agent : earlier.agent;
            if (kind != hazard_kind::use_after_free && std::find(producers.begin(), producers.end(), producer) == producers.end()) {
              producers.push_back(producer);
            }
          });
        });
      }
    };
    collect(reads, access_mode::read);
    collect(writes, access_mode::write);
    for (const agent_slot producer : producers) wait_for(agent, producer);
  }

  void wait_for(agent_slot waiter, agent_slot producer) {
    agents.at(waiter).clock.join(agents.at(producer).clock);
    const stream_id producer_id = agents.at(producer).id;
    if (waiter == host_slot) {
      agents.host_changed();
      ++counts.host_syncs;
      inserted_now.push_back(insertion{insertion_kind::host_sync, {}, producer_id, 0});
    } else {
      ++counts.stream_waits;
      inserted_now.push_back(insertion{insertion_kind::stream_wait, agents.at(waiter).id, producer_id, 0});
    }
  }

  // ---- lifetimes ----

  std::span<const insertion> free_block(std::uint64_t ptr, op_site site) {
    inserted_now.clear();
    allocation& block = allocations.starting_at(ptr);
    vector_clock release = agents.host_clock();  // host ops before the free precede any reuse
    release.join(agents.at(block.stream).clock);
    for (const agent_slot stream : block.recorded) release.join(agents.at(stream).clock);
    if (mode == policy::enforce) insert_missing_records(block, release);
    const free_record freed{site.label, site.line, ptr};
    const release_point point{release, agents.host_clock()};
    shadow.update(block.bytes(), [&](shadow_cell& cell, byte_range) { retire(cell, point, freed); });
    agents.release(block.stream);
    for (const agent_slot stream : block.recorded) agents.release(stream);
    allocations.remove(ptr);
    return inserted_now;
  }

  // enforce: every stream that touched the block and is not covered gets recorded on it.
  void insert_missing_records(allocation& block, vector_clock& release) {
    std::vector<agent_slot> missing;
    const auto note_uncovered = [&](const access_record& old) {
      if (!release.covers(old.agent, old.time) && std::find(missing.begin(), missing.end(), old.agent) == missing.end()) {
        missing.push_back(old.agent);
      }
    };
    shadow.visit(block.bytes(), [&](const shadow_cell& cell, byte_range) {
      if (cell.write) note_uncovered(*cell.write);
      cell.reads.for_each(note_uncovered);
    });
    for (const agent_slot stream : missing) {
      release.join(agents.at(stream).clock);
      block.recorded.push_back(stream);
      agents.hold(stream);
      ++counts.record_streams;
      inserted_now.push_back(insertion{insertion_kind::record_stream, {}, agents.at(stream).id, block.first});
    }
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

  void wait(agent_slot stream, event_id event, op_site site) {
    agents.enqueue(stream);
    auto it = events.find(static_cast<std::uint64_t>(event));
    if (it == events.end()) {
      emit_wait_finding(hazard_kind::wait_unrecorded, stream, event, site);
      return;
    }
    auto& clock = agents.at(stream).clock;
    if (clock.includes(it->second.clock)) {
      emit_wait_finding(hazard_kind::redundant_wait, stream, event, site);
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
      const site_pair key{f.kind, f.first.label, site.label};
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
    const site_pair key{kind, site.label, site.label};
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

std::span<const insertion> engine::free(std::uint64_t ptr, op_site site) {
  if (!impl_->tracking()) return {};
  record_op(impl_->recorder, free_op(ptr, impl_->labels.loc(site.label)));
  return impl_->free_block(ptr, site);
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

std::span<const insertion> engine::access(stream_id stream, std::span<const byte_range> reads,
                                          std::span<const byte_range> writes, op_site site) {
  if (!impl_->tracking()) return {};
  record_op(impl_->recorder, kernel_op(stream, impl_->labels.op_name(site.label), reads, writes, impl_->labels.loc(site.label)));
  return impl_->access_as(impl_->agents.slot_of(stream), reads, writes, site);
}

std::span<const insertion> engine::host_access(std::span<const byte_range> reads, std::span<const byte_range> writes,
                                               op_site site) {
  if (!impl_->tracking()) return {};
  record_host_access(impl_->recorder, reads, writes, impl_->labels.loc(site.label));
  return impl_->access_as(host_slot, reads, writes, site);
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
