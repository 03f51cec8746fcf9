#include "alloc/pending_frees.hpp"

#include <algorithm>
#include <exception>
#include <mutex>

#include "alloc/sim_faults.hpp"

#include "streamsafe/stream.hpp"

namespace streamsafe::detail {

pending_frees::~pending_frees() = default;

pending_frees::totals pending_frees::held_totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

void pending_frees::count_held(const block& b, bool added) noexcept {
  totals_.blocks = added ? totals_.blocks + 1 : totals_.blocks - 1;
  totals_.bytes = added ? totals_.bytes + b.size : totals_.bytes - b.size;
  held_count_.store(totals_.blocks, std::memory_order_relaxed);
}

pending_frees::stream_fences& pending_frees::fences_of(std::shared_ptr<StreamImpl>& stream) {
  const auto it = std::find_if(streams_.begin(), streams_.end(),
                               [&stream](const stream_fences& s) { return s.stream == stream; });
  if (it != streams_.end()) return *it;
  stream_fences& added = streams_.emplace_back();
  added.stream = std::move(stream);
  return added;
}

std::uint32_t pending_frees::new_entry(block* freed, stream_pool* user, unsigned fences) {
  const entry fresh{freed, user, fences};
  if (!spare_entries_.empty()) {
    const std::uint32_t index = spare_entries_.back();
    spare_entries_.pop_back();
    entries_[index] = fresh;
    return index;
  }
  entries_.push_back(fresh);
  return static_cast<std::uint32_t>(entries_.size() - 1);
}

void pending_frees::hold(block* freed, stream_pool* user, std::span<std::shared_ptr<StreamImpl>> streams) {
  std::lock_guard lock(mutex_);
  const std::uint32_t index = new_entry(freed, user, static_cast<unsigned>(streams.size()));
  count_held(*freed, true);
  for (std::shared_ptr<StreamImpl>& stream : streams) {
    stream_fences& s = fences_of(stream);
    s.open.push_back(index);
    s.open_bytes += freed->size;
    // The free is held by every stream before any record can fail; a fence whose record fails
    // stays open, and the next poll or drain records it (and reports a device still failing).
    if (s.open.size() >= policy_.batch_frees || s.open_bytes >= policy_.batch_bytes) (void)try_record_open(s);
  }
}

std::exception_ptr pending_frees::try_record_open(stream_fences& s) noexcept {
  try {
    record_open(s);
    return nullptr;
  } catch (...) {
    return std::current_exception();
  }
}

void pending_frees::record_open(stream_fences& s) {
  if (s.open.empty()) return;
  inject_sim_fault(sim_faults().fence_records, "event record of a pending-free fence", s.stream.get());
  fence recorded{events_.acquire(), {}};
  recorded.event.record(StreamRef(s.stream.get()));
  recorded.holders.swap(s.open);
  s.open_bytes = 0;
  s.open_polls = 0;
  s.in_flight.push_back(std::move(recorded));
  ++totals_.fences_recorded;
}

void pending_frees::complete(const fence& f, std::vector<finished_free>& done) {
  for (const std::uint32_t index : f.holders) {
    entry& e = entries_[index];
    if (--e.fences_left != 0) continue;  // another stream still uses it
    done.push_back({e.freed, e.user});
    spare_entries_.push_back(index);
    count_held(*e.freed, false);
  }
}

void pending_frees::forget_idle_streams(stream_shares& dropped) {
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (!it->open.empty() || !it->in_flight.empty()) {
      ++it;
      continue;
    }
    dropped.push_back(std::move(it->stream));
    it = streams_.erase(it);
  }
}

void pending_frees::query(stream_fences& s, poll_mode mode, std::vector<finished_free>& done) {
  if (mode == poll_mode::lazy && s.polls_to_skip > 0) {
    --s.polls_to_skip;
    return;
  }
  while (!s.in_flight.empty() && s.in_flight.front().event.query()) {
    complete(s.in_flight.front(), done);
    s.in_flight.pop_front();  // its event goes back to the pool
    s.backoff = 0;
  }
  if (s.in_flight.empty()) return;
  s.backoff = std::min(2 * s.backoff + 1, max_backoff_polls);
  s.polls_to_skip = s.backoff;
}

void pending_frees::poll(poll_mode mode, std::vector<finished_free>& done) {
  stream_shares dropped;  // destroyed after the lock is released: a stream's end is a device call
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  std::exception_ptr failure;  // the first; the other streams are still polled
  for (stream_fences& s : streams_) {
    // Lazy polls let an open fence collect frees for as many polls as a batch has frees, so a
    // steady stream of frees is fenced once per batch even when each fence completes at once.
    const bool due = !s.open.empty() && ++s.open_polls >= policy_.batch_frees;
    std::exception_ptr failed = mode == poll_mode::eager || due ? try_record_open(s) : nullptr;
    try {
      query(s, mode, done);
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
    if (!failure) failure = failed;
  }
  forget_idle_streams(dropped);
  lock.unlock();
  if (failure) std::rethrow_exception(failure);
}

void pending_frees::drain(std::vector<finished_free>& done) {
  stream_shares dropped;
  std::vector<taken_fence> waiting;
  std::exception_ptr failure;  // of a record: that fence stays open, the others are waited for
  {
    std::lock_guard lock(mutex_);
    for (stream_fences& s : streams_) {
      std::exception_ptr failed = try_record_open(s);
      if (!failure) failure = failed;
      for (fence& f : s.in_flight) waiting.push_back({s.stream, std::move(f)});
      s.in_flight.clear();
      s.backoff = s.polls_to_skip = 0;
    }
  }
  std::size_t waited = 0;
  try {
    for (; waited < waiting.size(); ++waited) waiting[waited].taken.event.synchronize();
  } catch (...) {
    give_back_unwaited(waiting, waited, done);
    throw;
  }
  {
    std::lock_guard lock(mutex_);
    for (const taken_fence& t : waiting) complete(t.taken, done);
    forget_idle_streams(dropped);
  }
  if (failure) std::rethrow_exception(failure);
}

void pending_frees::give_back_unwaited(std::vector<taken_fence>& waiting, std::size_t waited,
                                       std::vector<finished_free>& done) {
  // The fences waited for are complete; the others go back to their streams (oldest first), so
  // that their blocks stay held rather than lost.
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < waited; ++i) complete(waiting[i].taken, done);
  for (std::size_t i = waiting.size(); i-- > waited;) {
    fences_of(waiting[i].stream).in_flight.push_front(std::move(waiting[i].taken));
  }
}

}  // namespace streamsafe::detail
