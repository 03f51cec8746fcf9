#include "alloc/chunk_packer.hpp"

#include <algorithm>
#include <tuple>

#include "common/expects.hpp"

namespace streamsafe::detail {

namespace {
constexpr std::size_t none = ~std::size_t{0};
}  // namespace

std::size_t chunk_packer::free_end(const chunk& c) const noexcept {
  return !c.free.empty() && c.free.back().end == granularity_ ? granularity_ - c.free.back().begin : 0;
}

std::size_t chunk_packer::free_start(const chunk& c) const noexcept {
  return !c.free.empty() && c.free.front().begin == 0 ? c.free.front().end : 0;
}

bool chunk_packer::wholly_free(const chunk& c) const noexcept {
  return c.free.size() == 1 && c.free.front().begin == 0 && c.free.front().end == granularity_;
}

std::size_t chunk_packer::free_bytes() const noexcept {
  std::size_t total = 0;
  for (const chunk& c : chunks_) {
    if (!c.held) continue;
    for (const range& r : c.free) total += r.end - r.begin;
  }
  return total;
}

chunk_packer::plan chunk_packer::plan_segment(std::size_t bytes) const {
  // The tail's candidates: free starts of partly used chunks, smallest first (best fit).
  std::vector<std::pair<std::size_t, std::size_t>> starts;
  for (const std::size_t i : partial_) {
    if (const std::size_t length = free_start(chunks_[i]); length != 0) starts.emplace_back(length, i);
  }
  std::sort(starts.begin(), starts.end());

  struct choice {
    std::size_t fresh = none;
    std::size_t head_bytes = 0;
    std::size_t leftover = 0;
    std::size_t head_chunk = none;
    std::size_t tail_chunk = none;
    [[nodiscard]] auto rank() const { return std::tuple(fresh, ~head_bytes, leftover); }
  };
  choice best;
  const auto consider = [&](std::size_t head_bytes, std::size_t head_chunk) {
    const std::size_t rest = bytes - head_bytes;
    const std::size_t tail = rest % granularity_;
    choice candidate{.head_bytes = head_bytes, .head_chunk = head_chunk};
    std::size_t needed = rest / granularity_;
    if (tail != 0) {
      const auto fit = std::lower_bound(starts.begin(), starts.end(), std::pair(tail, std::size_t{0}));
      if (fit != starts.end()) {
        candidate.tail_chunk = fit->second;
        candidate.leftover = fit->first - tail;
      } else {
        ++needed;
      }
    }
    candidate.fresh = needed > wholly_free_.size() ? needed - wholly_free_.size() : 0;
    if (candidate.rank() < best.rank()) best = candidate;
  };
  consider(0, none);
  for (const std::size_t i : partial_) {
    if (const std::size_t length = free_end(chunks_[i]); length != 0 && length <= bytes) consider(length, i);
  }

  plan result;
  result.fresh_chunks = best.fresh;
  if (best.head_bytes != 0) {
    result.pieces.push_back({{best.head_chunk, granularity_ - best.head_bytes, granularity_}, false});
  }
  std::size_t free_used = 0;  // wholly free chunks handed out so far, from the back
  const auto next_whole = [&](std::size_t end) -> planned_piece {
    if (free_used < wholly_free_.size()) return {{wholly_free_[wholly_free_.size() - 1 - free_used++], 0, end}, false};
    return {{0, 0, end}, true};
  };
  const std::size_t rest = bytes - best.head_bytes;
  for (std::size_t i = 0; i < rest / granularity_; ++i) result.pieces.push_back(next_whole(granularity_));
  if (const std::size_t tail = rest % granularity_; tail != 0) {
    result.pieces.push_back(best.tail_chunk != none ? planned_piece{{best.tail_chunk, 0, tail}, false} : next_whole(tail));
  }
  return result;
}

chunk_piece chunk_packer::cut(std::size_t chunk, range r, std::size_t bytes) const noexcept {
  // Next to the used neighbour: a free end (or start) of the chunk stays one, for a later
  // segment's head (or tail).
  if (r.begin != 0 || r.end == granularity_) return {chunk, r.begin, r.begin + bytes};
  return {chunk, r.end - bytes, r.end};
}

chunk_packer::plan chunk_packer::plan_small_segment(std::size_t bytes, std::size_t window_bytes) const {
  SS_EXPECTS(bytes <= granularity_, "chunk_packer: a small segment of ", bytes, " bytes is larger than a chunk");
  const auto window = [&](std::size_t length) {
    return window_bytes == 0 ? length : std::max(bytes, std::min(length, window_bytes));
  };
  std::size_t best_chunk = none;
  range best_range{0, 0};
  for (const std::size_t i : partial_) {
    for (const range& r : chunks_[i].free) {
      const std::size_t length = r.end - r.begin;
      if (length >= bytes && (best_chunk == none || length < best_range.end - best_range.begin)) {
        best_chunk = i;
        best_range = r;
      }
    }
  }
  if (best_chunk != none) {
    return {{{cut(best_chunk, best_range, window(best_range.end - best_range.begin)), false}}, 0};
  }
  const range whole{0, granularity_};
  if (!wholly_free_.empty()) return {{{cut(wholly_free_.back(), whole, window(granularity_)), false}}, 0};
  return {{{cut(0, whole, window(granularity_)), true}}, 1};
}

std::size_t chunk_packer::add(physical_handle handle) {
  std::size_t index = chunks_.size();
  if (!unused_slots_.empty()) {
    index = unused_slots_.back();
    unused_slots_.pop_back();
  } else {
    chunks_.emplace_back();
  }
  chunks_[index] = chunk{handle, {{0, granularity_}}, true, nullptr, 0};
  ++held_;
  classify(index);
  return index;
}

std::vector<chunk_piece> chunk_packer::take(const plan& planned, std::span<const physical_handle> fresh) {
  SS_EXPECTS(fresh.size() == planned.fresh_chunks, "chunk_packer: ", fresh.size(), " new chunks for a plan of ",
             planned.fresh_chunks);
  std::vector<chunk_piece> taken;
  taken.reserve(planned.pieces.size());
  std::size_t next_fresh = 0;
  for (const planned_piece& p : planned.pieces) {
    chunk_piece piece = p.piece;
    if (p.fresh) piece.chunk = add(fresh[next_fresh++]);
    take_bytes(piece);
    taken.push_back(piece);
  }
  return taken;
}

void chunk_packer::take(std::span<const chunk_piece> pieces) {
  for (const chunk_piece& piece : pieces) take_bytes(piece);
}

bool chunk_packer::is_free(const chunk_piece& piece) const {
  check(piece);
  const std::vector<range>& free = chunks_[piece.chunk].free;
  return std::any_of(free.begin(), free.end(), [&](const range& r) { return r.begin <= piece.begin && piece.end <= r.end; });
}

void chunk_packer::take_bytes(const chunk_piece& piece) {
  check(piece);
  std::vector<range>& free = chunks_[piece.chunk].free;
  const auto it = std::find_if(free.begin(), free.end(),
                               [&](const range& r) { return r.begin <= piece.begin && piece.end <= r.end; });
  SS_EXPECTS(it != free.end(), "chunk_packer: bytes [", piece.begin, ", ", piece.end, ") of chunk ", piece.chunk,
             " are not free");
  const range was = *it;
  const auto at = free.erase(it);
  std::vector<range> rest;
  if (was.begin < piece.begin) rest.push_back({was.begin, piece.begin});
  if (piece.end < was.end) rest.push_back({piece.end, was.end});
  free.insert(at, rest.begin(), rest.end());
  classify(piece.chunk);
}

void chunk_packer::check(const chunk_piece& piece) const {
  SS_EXPECTS(piece.chunk < chunks_.size() && chunks_[piece.chunk].held && piece.begin < piece.end &&
                 piece.end <= granularity_,
             "chunk_packer: [", piece.begin, ", ", piece.end, ") of chunk ", piece.chunk, " is not a piece of a held chunk");
}

void chunk_packer::give_back(std::span<const chunk_piece> pieces) {
  for (const chunk_piece& piece : pieces) {
    check(piece);
    std::vector<range>& free = chunks_[piece.chunk].free;
    auto at = std::lower_bound(free.begin(), free.end(), piece.begin,
                               [](const range& r, std::size_t begin) { return r.begin < begin; });
    SS_EXPECTS((at == free.end() || piece.end <= at->begin) && (at == free.begin() || std::prev(at)->end <= piece.begin),
               "chunk_packer: bytes [", piece.begin, ", ", piece.end, ") of chunk ", piece.chunk, " are free already");
    at = free.insert(at, range{piece.begin, piece.end});
    if (const auto right = std::next(at); right != free.end() && right->begin == at->end) {
      at->end = right->end;
      free.erase(right);
    }
    if (at != free.begin() && std::prev(at)->end == at->begin) {
      std::prev(at)->end = at->end;
      free.erase(at);
    }
    classify(piece.chunk);
  }
}

std::vector<physical_handle> chunk_packer::remove_wholly_free() {
  std::vector<physical_handle> removed;
  removed.reserve(wholly_free_.size());
  while (!wholly_free_.empty()) removed.push_back(remove_chunk(wholly_free_.back()));
  return removed;
}

physical_handle chunk_packer::remove_chunk(std::size_t index) {
  SS_EXPECTS(index < chunks_.size() && wholly_free(chunks_[index]), "chunk_packer: chunk ", index,
             " is not held or not wholly free");
  return forget(index);
}

physical_handle chunk_packer::forget(std::size_t index) {
  chunk& c = chunks_[index];
  const physical_handle handle = c.handle;
  unlist(index);
  c = chunk{};
  unused_slots_.push_back(index);
  --held_;
  return handle;
}

std::vector<physical_handle> chunk_packer::remove_all() {
  std::vector<physical_handle> removed;
  for (std::size_t i = 0; i < chunks_.size(); ++i) {
    if (chunks_[i].held) removed.push_back(forget(i));
  }
  return removed;
}

void chunk_packer::unlist(std::size_t index) noexcept {
  chunk& c = chunks_[index];
  if (c.list == nullptr) return;
  std::vector<std::size_t>& list = *c.list;
  const std::size_t moved = list.back();
  list[c.slot] = moved;
  chunks_[moved].slot = c.slot;
  list.pop_back();
  c.list = nullptr;
}

void chunk_packer::classify(std::size_t index) {
  chunk& c = chunks_[index];
  std::vector<std::size_t>* list = wholly_free(c) ? &wholly_free_ : c.free.empty() ? nullptr : &partial_;
  if (list == c.list) return;
  unlist(index);
  if (list == nullptr) return;
  c.list = list;
  c.slot = list->size();
  list->push_back(index);
}

}  // namespace streamsafe::detail
