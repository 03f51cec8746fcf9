#include "alloc/stream_pool.hpp"

#include <algorithm>
#include <utility>

#include "alloc/size_classes.hpp"

namespace streamsafe::detail {

stream_pool::~stream_pool() {
  while (spare_blocks_ != nullptr) delete std::exchange(spare_blocks_, spare_blocks_->next_free);
}

block* stream_pool::new_block() {
  if (spare_blocks_ == nullptr) return new block;
  block* b = std::exchange(spare_blocks_, spare_blocks_->next_free);
  *b = block{};
  return b;
}

void stream_pool::recycle(block* b) noexcept {
  b->recorded_streams.clear();
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
  bins_[index(b->owner->kind)].insert(rest);
}

block* stream_pool::take(block* candidate, std::size_t bytes, stream_pool& user) {
  const bool backed = prefix_mapped(*candidate, bytes);
  bins_[index(candidate->owner->kind)].remove(candidate);
  split(candidate, bytes);
  candidate->mapped = backed;  // the part handed out, not the rest
  candidate->state = block_state::live;
  candidate->user = &user;
  ++candidate->owner->live_blocks;
  return candidate;
}

void stream_pool::absorb(block* left, block* right) noexcept {
  left->size += right->size;
  left->mapped = left->mapped && right->mapped;
  left->next = right->next;
  if (right->next != nullptr) right->next->prev = left;
  recycle(right);
}

void stream_pool::give_back(block* b) {
  free_bins& bins = bins_[index(b->owner->kind)];
  b->state = block_state::free;
  b->requested = 0;
  b->user = nullptr;
  b->recorded_streams.clear();
  --b->owner->live_blocks;
  if (block* left = b->prev; left != nullptr && left->state == block_state::free) {
    bins.remove(left);
    absorb(left, b);
    b = left;
  }
  if (block* right = b->next; right != nullptr && right->state == block_state::free) {
    bins.remove(right);
    absorb(b, right);
  }
  bins.insert(b);
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
