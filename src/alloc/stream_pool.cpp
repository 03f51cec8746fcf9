#include "alloc/stream_pool.hpp"

#include <algorithm>
#include <utility>

#include "alloc/size_classes.hpp"

namespace streamsafe::detail {

stream_pool::~stream_pool() {
  while (spare_blocks_ != nullptr) delete std::exchange(spare_blocks_, spare_blocks_->next_free);
}

bool stream_pool::unused() const noexcept {
  if (stats.active.current != 0) return false;
  return std::all_of(segments_.begin(), segments_.end(), [](const segment* s) { return s->live_blocks == 0; });
}

std::shared_ptr<StreamImpl> stream_pool::unbind() noexcept {
  deferred_merges_.clear();  // every segment is gone: the entries are stale
  stats = allocator_stats{};
  gave_chunks = false;  // a record reused for another stream starts as a new pool
  keeps_chunks = false;
  return std::exchange(stream_, nullptr);
}

block* stream_pool::new_block() {
  if (spare_blocks_ == nullptr) return new block;
  block* b = std::exchange(spare_blocks_, spare_blocks_->next_free);
  *b = block{};
  return b;
}

void stream_pool::recycle(block* b) noexcept {
  b->recorded_streams.clear();
  b->awaiting_merge = false;
  b->next_free = spare_blocks_;
  spare_blocks_ = b;
}

void stream_pool::split(block* b, std::size_t bytes) {
  if (b->size - bytes < min_block_bytes) return;
  block* rest = new_block();
  rest->address = b->address + bytes;
  rest->size = b->size - bytes;
  rest->mapped = b->mapped;
  rest->owner = b->owner;
  rest->prev = b;
  rest->next = b->next;
  if (b->next != nullptr) b->next->prev = rest;
  b->next = rest;
  b->size = bytes;
  // A block whose merge was deferred may have a free right neighbour: the rest takes it in, so
  // no two free neighbours are both off the deferred list.
  absorb_free_right(rest);
  bins_[index(b->owner->kind)].insert(rest);
}

block* stream_pool::take(block* candidate, std::size_t bytes, stream_pool& user) {
  return take_at(candidate, placement(*candidate, bytes), bytes, user);
}

block* stream_pool::take_at(block* candidate, std::uintptr_t at, std::size_t bytes, stream_pool& user) {
  const bool backed = candidate->mapped || unmapped_chunks(*candidate->owner, at, bytes) == 0;
  free_bins& bins = bins_[index(candidate->owner->kind)];
  bins.remove(candidate);
  if (at != candidate->address) {  // the head stays free, the request starts the rest
    split(candidate, at - candidate->address);
    bins.insert(candidate);
    candidate = candidate->next;
    bins.remove(candidate);
  }
  split(candidate, bytes);
  candidate->mapped = backed;  // the part handed out, not the rest
  candidate->state = block_state::live;
  candidate->user = &user;
  ++candidate->owner->live_blocks;
  live_.insert(candidate->address, candidate);
  return candidate;
}

void stream_pool::absorb(block* left, block* right) noexcept {
  left->size += right->size;
  left->mapped = left->mapped && right->mapped;
  left->next = right->next;
  if (right->next != nullptr) right->next->prev = left;
  recycle(right);
}

void stream_pool::absorb_free_right(block* b) noexcept {
  free_bins& bins = bins_[index(b->owner->kind)];
  while (block* right = b->next) {
    if (right->state != block_state::free) break;
    bins.remove(right);
    absorb(b, right);
  }
}

void stream_pool::mark_free(block* b) noexcept {
  b->state = block_state::free;
  b->requested = 0;
  b->user = nullptr;
  b->recorded_streams.clear();
  --b->owner->live_blocks;
}

void stream_pool::merge_and_bin(block* b) {
  free_bins& bins = bins_[index(b->owner->kind)];
  // Loops: with deferred merges, a run of free blocks may lie on either side.
  while (block* left = b->prev) {
    if (left->state != block_state::free) break;
    bins.remove(left);
    absorb(left, b);
    b = left;
  }
  absorb_free_right(b);
  bins.insert(b);
}

void stream_pool::give_back(block* b) {
  mark_free(b);
  merge_and_bin(b);
}

void stream_pool::cache(block* b) {
  mark_free(b);
  bins_[index(b->owner->kind)].insert(b);
  if (b->awaiting_merge) return;  // listed already: it went round the cycle again
  b->awaiting_merge = true;
  deferred_merges_.push_back(b);
  if (deferred_merges_.size() >= deferred_merge_limit) merge_deferred();
}

void stream_pool::merge_deferred() {
  for (block* b : deferred_merges_) {
    if (!b->awaiting_merge) continue;  // stale: recycled since
    b->awaiting_merge = false;
    if (b->state != block_state::free) continue;  // taken again: its free will list it anew
    bins_[index(b->owner->kind)].remove(b);
    merge_and_bin(b);
  }
  deferred_merges_.clear();
}

template <typename Accept>
block* stream_pool::find_merging(pool_kind kind, std::size_t bytes, Accept accept) {
  block* b = find(kind, bytes);
  if (accept(b) || deferred_merges_.empty()) return b;
  merge_deferred();
  return find(kind, bytes);
}

block* stream_pool::find_close_fit(pool_kind kind, std::size_t bytes) {
  return find_merging(kind, bytes, [bytes](const block* b) { return b != nullptr && b->size - bytes <= bytes / 32; });
}

block* stream_pool::find_mapped(pool_kind kind, std::size_t bytes) {
  const auto usable = [bytes](const block* b) { return b != nullptr && placement_mapped(*b, bytes); };
  block* b = find_merging(kind, bytes, usable);
  return usable(b) ? b : nullptr;
}

void stream_pool::adopt(segment* s) {
  block* whole = new_block();
  whole->address = s->address;
  whole->size = s->size;
  whole->mapped = !s->expandable;
  whole->owner = s;
  s->first = whole;
  s->owner = this;
  segments_.push_back(s);
  bins_[index(s->kind)].insert(whole);
}

void stream_pool::disown(segment* s) {
  bins_[index(s->kind)].remove(s->first);
  recycle(s->first);
  s->first = nullptr;
  segments_.erase(std::find(segments_.begin(), segments_.end(), s));
}

}  // namespace streamsafe::detail
