#include "pipeline/collectives/sim_rendezvous.hpp"

#include <algorithm>
#include <sstream>

namespace streamsafe::collectives::detail {

namespace {

std::string collective_text(std::uint64_t index, const SimArrival& arrival) {
  const auto& last = arrival.issued->records().back();
  std::ostringstream out;
  out << "sim all_reduce '" << last.name << "' (bucket " << last.bucket << ", collective " << index << ", step "
      << arrival.issued->step() << ", rank " << arrival.rank << ")";
  return out.str();
}

bool same_order(const collective_sequence& a, const collective_sequence& b) {
  return a.step() == b.step() && a.hash() == b.hash() && a.records().size() == b.records().size();
}

}  // namespace

std::string SimRendezvous::abort_reason() const {
  std::lock_guard lock(mutex_);
  return abort_reason_;
}

void SimRendezvous::all_reduce(std::uint64_t index, const SimArrival& arrival) {
  lock_type lock(mutex_);
  if (!abort_reason_.empty()) throw_abort_reason(collective_text(index, arrival) + ": group aborted earlier: ");
  Slot& slot = slots_[index];
  slot.arrivals.resize(static_cast<std::size_t>(size_), nullptr);
  slot.arrivals[static_cast<std::size_t>(arrival.rank)] = &arrival;
  if (++slot.arrived == size_) {
    const SimArrival& rank0 = *slot.arrivals.front();
    for (const SimArrival* other : slot.arrivals) {
      if (!same_order(*other->issued, *rank0.issued)) {
        abort(failure::order_mismatch, describe_mismatch(other->issued->step(), other->rank, *other->issued, *rank0.issued));
      }
    }
    complete(slot);
    changed_.notify_all();
  } else {
    const bool woke = changed_.wait_for(lock, timeout_, [&] { return slot.reduced || !abort_reason_.empty(); });
    if (!woke) {
      abort(failure::peer_missing,
            collective_text(index, arrival) + ": " + missing_ranks(slot) + " did not arrive within " +
                std::to_string(timeout_.count()) + " ms");
    }
    if (!slot.reduced) throw_abort_reason("");
  }
  leave(index, slot);
}

void SimRendezvous::complete(Slot& slot) {
  // Every rank's kernel is parked in this call, so no stream touches the buffers meanwhile.
  const std::size_t count = slot.arrivals.front()->count;
  std::vector<float> sum(count, 0.0F);
  for (const SimArrival* a : slot.arrivals) {
    std::transform(sum.begin(), sum.end(), a->data, sum.begin(), [](float s, float v) { return s + v; });
  }
  for (const SimArrival* a : slot.arrivals) std::copy(sum.begin(), sum.end(), a->data);
  slot.reduced = true;
}

void SimRendezvous::abort(failure kind, std::string reason) {
  if (abort_reason_.empty()) {
    abort_reason_ = std::move(reason);
    abort_kind_ = kind;
  }
  changed_.notify_all();
  throw_abort_reason("");
}

void SimRendezvous::throw_abort_reason(const std::string& context) const {
  switch (abort_kind_) {
    case failure::order_mismatch: throw order_mismatch(context + abort_reason_);
    case failure::peer_missing: throw error(context + abort_reason_);
  }
  throw error(context + abort_reason_);
}

std::string SimRendezvous::missing_ranks(const Slot& slot) const {
  std::string ranks;
  for (std::size_t r = 0; r < slot.arrivals.size(); ++r) {
    if (slot.arrivals[r] == nullptr) ranks += (ranks.empty() ? "rank " : ", rank ") + std::to_string(r);
  }
  return ranks;
}

void SimRendezvous::leave(std::uint64_t index, Slot& slot) {
  if (++slot.left == size_) slots_.erase(index);
}

}  // namespace streamsafe::collectives::detail
