#include "alloc/iteration_plan.hpp"

#include <algorithm>
#include <utility>

#include "alloc/offset_planner.hpp"
#include "alloc/size_classes.hpp"
#include "alloc/stream_share.hpp"
#include "common/expects.hpp"
#include "streamsafe/alloc/allocator_observer.hpp"

namespace streamsafe::detail {

namespace {

void add_unique(std::vector<std::shared_ptr<StreamImpl>>& streams, const std::shared_ptr<StreamImpl>& s,
                const StreamImpl& except) {
  if (s == nullptr || s.get() == &except) return;
  if (std::none_of(streams.begin(), streams.end(), [&](const auto& have) { return have.get() == s.get(); })) {
    streams.push_back(s);
  }
}

}  // namespace

iteration_plan::iteration_plan(memory_source& source, EventPool& events, std::size_t granularity, plan_host& host,
                               allocator_observer* observer)
    : source_(source), events_(events), granularity_(granularity), host_(host), observer_(observer) {}

iteration_plan::~iteration_plan() {
  if (arena_.bytes == 0) return;
  for (StreamImpl* user : arena_users()) {
    try {
      StreamRef(user).synchronize();
    } catch (...) {
      // A failed device cannot be waited for; the arena is returned all the same.
    }
  }
  source_.release(arena_.base, arena_.bytes);
  for (std::size_t offset = 0; offset < arena_.bytes; offset += granularity_) {
    host_.tell_mapping(arena_.base + offset, granularity_, mapping_change::unmapped);
  }
}

std::vector<StreamImpl*> iteration_plan::arena_users() const {
  std::vector<StreamImpl*> users;
  const auto add = [&users](const std::shared_ptr<StreamImpl>& s) {
    if (s != nullptr && std::find(users.begin(), users.end(), s.get()) == users.end()) users.push_back(s.get());
  };
  for (const planned_block& b : blocks_) {
    add(b.stream);
    for (const auto& r : b.recorded) add(r);
  }
  for (const auto& r : history_.recorded) add(r);
  return users;
}

iteration_plan::served iteration_plan::allocate(std::size_t rounded, std::size_t requested, StreamImpl& stream) {
  const phase now = phase_.load(std::memory_order_acquire);
  if (now == phase::settled) {
    thread_local unsigned tick = 0;
    if ((++tick & 255u) != 0 || host_.device_calls() == settled_calls_) return {};
    std::lock_guard lock(mutex_);
    if (phase_ == phase::settled) restart_recording();  // the workload grew again: look again
    return {};
  }
  if (now == phase::active) {
    thread_local std::vector<std::shared_ptr<StreamImpl>> waits;
    waits.clear();
    served out;
    {
      std::lock_guard lock(mutex_);
      out = phase_ == phase::active ? allocate_active(rounded, requested, stream, waits) : log_alloc(rounded, stream);
    }
    if (out.ptr != nullptr && !waits.empty()) order_after(out.ptr, rounded, stream, waits);
    waits.clear();
    return out;
  }
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    disturbed_.store(true, std::memory_order_relaxed);
    return {};
  }
  if (!begin_with(request{request_kind::alloc, rounded, stream.id(), 0})) return log_alloc(rounded, stream);
  if (phase_ != phase::active) return {nullptr, ++sequence_};  // settled: the pools serve it
  // A plan that starts again over an arena it served before waits for the arena's earlier users.
  thread_local std::vector<std::shared_ptr<StreamImpl>> waits;
  waits.clear();
  const served out = allocate_active(rounded, requested, stream, waits);
  lock.unlock();
  if (out.ptr != nullptr && !waits.empty()) order_after(out.ptr, rounded, stream, waits);
  waits.clear();
  return out;
}

bool iteration_plan::begin_with(const request& next) {
  if (!found_) return false;
  repeating_period period = std::move(*found_);
  found_.reset();
  if (period.requests.front() != next) {
    detector_.reject();
    return false;
  }
  detector_.restart();
  if (period.device_calls == 0) {
    settle();
  } else {
    activate(std::move(period));
  }
  return true;
}

iteration_plan::served iteration_plan::log_alloc(std::size_t rounded, StreamImpl& stream) {
  if (disturbed_.exchange(false, std::memory_order_relaxed)) detector_.restart();
  const std::uint64_t sequence = ++sequence_;
  detector_.note_alloc(sequence, rounded, stream.id(), host_.device_calls());
  after_period_found();
  return {nullptr, sequence};
}

void iteration_plan::log_free(std::uint64_t allocated_at) {
  if (disturbed_.exchange(false, std::memory_order_relaxed)) detector_.restart();
  detector_.note_free(++sequence_, allocated_at, host_.device_calls());
  after_period_found();
}

void iteration_plan::restart_recording() {
  detector_.restart();
  found_.reset();
  phase_.store(phase::recording, std::memory_order_release);
}

void iteration_plan::settle() {
  if (arena_.bytes != 0) release_arena();  // the pools serve the workload without device calls
  settled_calls_ = host_.device_calls();
  phase_.store(phase::settled, std::memory_order_release);
}

void iteration_plan::after_period_found() {
  std::optional<repeating_period> period = detector_.take_period();
  if (!period) return;
  if (!unused()) {  // a plan needs its arena free
    detector_.reject();
    return;
  }
  found_ = std::move(period);
}

bool iteration_plan::same_plan(const repeating_period& period) const {
  return arena_.bytes != 0 && period.requests == book_.requests && period.lifetimes == book_.lifetimes;
}

void iteration_plan::activate(repeating_period period) {
  if (same_plan(period)) {  // the workload came back to the plan the arena holds
    book_.first_sequence = period.first_sequence;
    forget_occupants();
    ++activations_;
    phase_.store(phase::active, std::memory_order_release);
    return;
  }
  std::vector<cyclic_lifetime> lifetimes;
  std::vector<std::size_t> block_at(period.requests.size(), unplanned);
  for (std::size_t t = 0; t < period.requests.size(); ++t) {
    if (period.lifetimes[t] == 0) continue;
    block_at[t] = lifetimes.size();
    lifetimes.push_back({period.requests[t].bytes, t, period.lifetimes[t]});
  }
  if (lifetimes.empty()) {
    settle();
    return;
  }
  const offset_plan offsets = plan_offsets(lifetimes, period.requests.size());
  if (arena_.bytes != 0) release_arena();
  // The pools never call into the plan, so their locks may be taken under ours.
  host_.release_pool_cache();
  if (!map_arena(round_up(offsets.footprint, granularity_))) {
    settle();  // no room for the arena: the pools go on, and a later growth looks again
    return;
  }
  blocks_.assign(lifetimes.size(), planned_block{});
  for (std::size_t i = 0; i < lifetimes.size(); ++i) {
    blocks_[i].offset = offsets.offsets[i];
    blocks_[i].bytes = lifetimes[i].bytes;
  }
  book_ = plan_book{std::move(period.requests), std::move(period.lifetimes), std::move(block_at), period.first_sequence};
  occupants_.clear();
  history_ = {};
  predecessors_.assign(blocks_.size(), {});
  taken_since_activation_ = 0;
  index_offsets();
  ++activations_;
  phase_.store(phase::active, std::memory_order_release);
}

bool iteration_plan::map_arena(std::size_t bytes) {
  std::uintptr_t base = 0;
  try {
    base = source_.reserve(bytes);
    // One physical allocation for the whole arena: it is never unmapped in part, so the switch
    // costs four device calls (reserve, create, map, access) instead of three per chunk.
    source_.map_chunk(base, bytes);
  } catch (const std::exception&) {
    if (base != 0) source_.release(base, bytes);
    return false;
  }
  for (std::size_t offset = 0; offset < bytes; offset += granularity_) {
    host_.tell_mapping(base + offset, granularity_, mapping_change::mapped);
  }
  arena_ = arena{base, bytes};
  arena_base_.store(base, std::memory_order_release);
  arena_bytes_.store(bytes, std::memory_order_release);
  host_.note_reserved(static_cast<std::int64_t>(bytes), 1);
  return true;
}

void iteration_plan::release_arena() {
  // CUDA may still read the arena: everything enqueued on the streams that used it must finish.
  for (StreamImpl* user : arena_users()) {
    StreamRef(user).synchronize();
    host_.note_host_sync();
  }
  arena_bytes_.store(0, std::memory_order_release);
  arena_base_.store(0, std::memory_order_release);
  source_.release(arena_.base, arena_.bytes);
  for (std::size_t offset = 0; offset < arena_.bytes; offset += granularity_) {
    host_.tell_mapping(arena_.base + offset, granularity_, mapping_change::unmapped);
  }
  host_.note_reserved(-static_cast<std::int64_t>(arena_.bytes), -1);
  arena_ = {};
  blocks_.clear();
  occupants_.clear();
  predecessors_.clear();
  offsets_.clear();
  live_at_.clear();
  history_ = {};
  book_ = {};
}

void iteration_plan::derail() {
  ++derailments_;
  restart_recording();
  phase_.store(phase::derailed, std::memory_order_release);
}

iteration_plan::served iteration_plan::allocate_active(std::size_t rounded, std::size_t requested, StreamImpl& stream,
                                                       std::vector<std::shared_ptr<StreamImpl>>& waits) {
  const request& next = expected();
  if (next.kind != request_kind::alloc || next.bytes != rounded || next.stream != stream.id()) {
    derail();
    return log_alloc(rounded, stream);
  }
  const std::size_t index = book_.block_at[expected_phase()];
  if (index == unplanned) return {nullptr, ++sequence_};
  if (!occupy(index, stream, waits)) {  // an earlier block on these bytes is still live
    derail();
    return log_alloc(rounded, stream);
  }
  planned_block& b = blocks_[index];
  b.allocated_at = ++sequence_;
  b.requested = requested;
  ++planned_requests_;
  occupy_slot(b);
  stats_.num_cross_stream_reuses += waits.size();
  return {reinterpret_cast<void*>(arena_.base + b.offset), b.allocated_at};
}

void iteration_plan::occupy_slot(planned_block& b) {
  b.state = slot_state::live;
  live_at_[b.offset_slot] = static_cast<std::uint32_t>(&b - blocks_.data());
  ++live_blocks_;
  stats_.allocated_bytes.add(b.bytes);
  stats_.active_bytes.add(b.bytes);
  stats_.requested_bytes.add(b.requested);
  stats_.allocation.add(1);
  stats_.active.add(1);
}

void iteration_plan::vacate(planned_block& b) {
  b.state = slot_state::free;
  live_at_[b.offset_slot] = nobody;
  --live_blocks_;
  stats_.allocated_bytes.remove(b.bytes);
  stats_.active_bytes.remove(b.bytes);
  stats_.requested_bytes.remove(b.requested);
  stats_.allocation.remove(1);
  stats_.active.remove(1);
}

void iteration_plan::index_offsets() {
  offsets_.clear();
  for (const planned_block& b : blocks_) offsets_.push_back(b.offset);
  std::sort(offsets_.begin(), offsets_.end());
  offsets_.erase(std::unique(offsets_.begin(), offsets_.end()), offsets_.end());
  for (planned_block& b : blocks_) {
    b.offset_slot = static_cast<std::uint32_t>(std::lower_bound(offsets_.begin(), offsets_.end(), b.offset) - offsets_.begin());
  }
  live_at_.assign(offsets_.size(), nobody);
}

void iteration_plan::forget_occupants() {
  history_ = {};
  const auto keep = [this](const std::shared_ptr<StreamImpl>& s) {
    const auto same = [&](const auto& have) { return have.get() == s.get(); };
    if (s != nullptr && std::none_of(history_.recorded.begin(), history_.recorded.end(), same)) history_.recorded.push_back(s);
  };
  for (const planned_block& b : blocks_) {
    keep(b.stream);
    for (const auto& r : b.recorded) keep(r);
  }
  occupants_.clear();
  occupants_.emplace(0, occupied{arena_.bytes, blocks_.size()});
  taken_since_activation_ = 0;
}

bool iteration_plan::occupy(std::size_t index, StreamImpl& stream, std::vector<std::shared_ptr<StreamImpl>>& waits) {
  if (blocks_[index].state != slot_state::free) return false;
  const std::uint64_t period = blocks_.size();
  const bool known = taken_since_activation_ >= 2 * period;
  const bool taken = known ? occupy_known(index, waits, stream)
                           : occupy_tracked(index, taken_since_activation_ >= period, waits, stream);
  if (!taken) return false;
  ++taken_since_activation_;
  planned_block& b = blocks_[index];
  // The plan's block is on the same stream every period (else the request would not match): the
  // share held from the last one serves, without touching its count.
  if (b.stream.get() != &stream) b.stream = share_stream(stream);
  b.recorded.clear();
  return true;
}

bool iteration_plan::occupy_known(std::size_t index, std::vector<std::shared_ptr<StreamImpl>>& waits,
                                  const StreamImpl& stream) const {
  const std::vector<std::uint32_t>& before = predecessors_[index];
  for (const std::uint32_t p : before) {
    if (blocks_[p].state != slot_state::free) return false;
  }
  for (const std::uint32_t p : before) {
    add_unique(waits, blocks_[p].stream, stream);
    for (const auto& r : blocks_[p].recorded) add_unique(waits, r, stream);
  }
  return true;
}

bool iteration_plan::occupy_tracked(std::size_t index, bool learn, std::vector<std::shared_ptr<StreamImpl>>& waits,
                                    const StreamImpl& stream) {
  const planned_block& b = blocks_[index];
  const std::size_t begin = b.offset;
  const std::size_t end = b.offset + b.bytes;
  const auto occupant = [this](std::size_t block) -> const planned_block& {
    return block == blocks_.size() ? history_ : blocks_[block];
  };
  auto first = occupants_.upper_bound(begin);
  if (first != occupants_.begin() && std::prev(first)->second.end > begin) --first;
  auto past = first;
  for (; past != occupants_.end() && past->first < end; ++past) {
    if (occupant(past->second.block).state != slot_state::free) return false;
  }
  std::vector<std::uint32_t>* learned = learn ? &predecessors_[index] : nullptr;
  if (learned != nullptr) learned->clear();
  for (auto it = first; it != past; ++it) {
    const planned_block& before = occupant(it->second.block);
    add_unique(waits, before.stream, stream);
    for (const auto& r : before.recorded) add_unique(waits, r, stream);
    if (learned != nullptr && it->second.block != blocks_.size()) learned->push_back(static_cast<std::uint32_t>(it->second.block));
  }
  std::vector<std::pair<std::size_t, occupied>> kept;  // the parts of the first and last outside
  if (first != past && first->first < begin) kept.emplace_back(first->first, occupied{begin, first->second.block});
  if (first != past) {
    const auto last = std::prev(past);
    if (last->second.end > end) kept.emplace_back(end, occupied{last->second.end, last->second.block});
  }
  occupants_.erase(first, past);
  for (const auto& [at, what] : kept) occupants_.emplace(at, what);
  occupants_.emplace(begin, occupied{end, index});
  return true;
}

void iteration_plan::order_after(void* ptr, std::size_t bytes, StreamImpl& stream,
                                 const std::vector<std::shared_ptr<StreamImpl>>& waits) {
  try {
    for (const auto& earlier : waits) {
      PooledEvent done = events_.acquire();
      done.record(StreamRef(earlier.get()));
      StreamRef(&stream).wait(done);
      if (observer_ != nullptr) observer_->on_reuse(ptr, bytes, earlier->id(), stream.id());
    }
  } catch (...) {
    std::lock_guard lock(mutex_);  // the caller never gets the block: it is free again
    planned_block& b = blocks_[live_index(ptr, "allocate")];
    vacate(b);
    derail();
    throw;
  }
}

bool iteration_plan::owns(const void* ptr) const noexcept {
  const std::uintptr_t base = arena_base_.load(std::memory_order_acquire);
  const std::size_t bytes = arena_bytes_.load(std::memory_order_acquire);
  return reinterpret_cast<std::uintptr_t>(ptr) - base < bytes;
}

std::size_t iteration_plan::live_index(const void* ptr, const char* call) const {
  const std::size_t offset = reinterpret_cast<std::uintptr_t>(ptr) - arena_.base;
  const auto at = std::lower_bound(offsets_.begin(), offsets_.end(), offset);
  if (at != offsets_.end() && *at == offset) {
    const std::uint32_t index = live_at_[static_cast<std::size_t>(at - offsets_.begin())];
    if (index != nobody && blocks_[index].state == slot_state::live) return index;
  }
  SS_EXPECTS(false, "caching_allocator::", call, "(", ptr, "): not a live allocation of this allocator (",
             "freed already, or not the pointer allocate returned; nothing was changed)");
  return 0;
}

void iteration_plan::deallocate(void* ptr) {
  if (observer_ == nullptr) {
    std::lock_guard lock(mutex_);
    planned_block& b = blocks_[live_index(ptr, "deallocate")];
    vacate(b);
    note_free(b.allocated_at);
    return;
  }
  std::size_t index = 0;
  std::size_t bytes = 0;
  stream_id stream{};
  {
    std::lock_guard lock(mutex_);
    index = live_index(ptr, "deallocate");
    planned_block& b = blocks_[index];
    b.state = slot_state::freeing;  // out of every other call's reach while the observer runs
    bytes = b.bytes;
    stream = b.stream->id();
  }
  // Told before the bytes can be reused, so no one hears of their next allocation first.
  observer_->on_free(ptr, bytes, stream);
  std::lock_guard lock(mutex_);
  planned_block& b = blocks_[index];
  vacate(b);
  note_free(b.allocated_at);
}

void iteration_plan::note_free(std::uint64_t allocated_at) {
  const std::uint64_t distance = allocated_at == 0 ? unknown_distance : sequence_ + 1 - allocated_at;
  if (phase_ != phase::active && begin_with(request{request_kind::free, 0, stream_id{}, distance}) &&
      phase_ != phase::active) {
    ++sequence_;  // the first request of a period the pools serve without device calls
    return;
  }
  if (phase_ == phase::active) {
    const request& next = expected();
    if (next.kind == request_kind::free && allocated_at != 0 && next.distance == sequence_ + 1 - allocated_at) {
      ++sequence_;
      return;
    }
    derail();
  }
  log_free(allocated_at);
}

void iteration_plan::pool_freed(std::uint64_t sequence) {
  const phase now = phase_.load(std::memory_order_acquire);
  if (now == phase::settled) return;
  if (now == phase::active) {
    std::lock_guard lock(mutex_);
    note_free(sequence);
    return;
  }
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    disturbed_.store(true, std::memory_order_relaxed);
    return;
  }
  note_free(sequence);
}

bool iteration_plan::record_stream(void* ptr, StreamImpl& stream) {
  std::shared_ptr<StreamImpl> share = share_stream(stream);
  std::lock_guard lock(mutex_);
  planned_block& b = blocks_[live_index(ptr, "record_stream")];
  if (b.stream.get() == &stream) return false;
  if (std::any_of(b.recorded.begin(), b.recorded.end(), [&](const auto& r) { return r.get() == &stream; })) return false;
  b.recorded.push_back(std::move(share));
  return true;
}

block_info iteration_plan::block_of(const void* ptr) const {
  std::lock_guard lock(mutex_);
  const planned_block& b = blocks_[live_index(ptr, "block_of")];
  return {reinterpret_cast<void*>(arena_.base + b.offset), b.bytes, b.requested, b.stream->id()};
}

StreamRef iteration_plan::allocation_stream(const void* ptr) const {
  std::lock_guard lock(mutex_);
  return StreamRef(blocks_[live_index(ptr, "allocation_stream")].stream.get());
}

iteration_plan::arena_view iteration_plan::view() const {
  std::lock_guard lock(mutex_);
  arena_view out{arena_.base, arena_.bytes, {}};
  for (const planned_block& b : blocks_) {
    if (b.state != slot_state::free) {
      out.live.push_back({reinterpret_cast<void*>(arena_.base + b.offset), b.bytes, b.requested, b.stream->id()});
    }
  }
  return out;
}

void iteration_plan::add_stats(allocator_stats& total) const {
  std::lock_guard lock(mutex_);
  total.allocated_bytes.merge(stats_.allocated_bytes);
  total.active_bytes.merge(stats_.active_bytes);
  total.requested_bytes.merge(stats_.requested_bytes);
  total.allocation.merge(stats_.allocation);
  total.active.merge(stats_.active);
  total.num_cross_stream_reuses += stats_.num_cross_stream_reuses;
  total.num_plan_activations = activations_;
  total.num_plan_derailments = derailments_;
  total.num_planned_allocations = planned_requests_;
  total.plan_arena_bytes = arena_.bytes;
}

void iteration_plan::release_if_unused() {
  std::lock_guard lock(mutex_);
  if (arena_.bytes == 0 || !unused()) return;
  release_arena();
  restart_recording();
}

}  // namespace streamsafe::detail
