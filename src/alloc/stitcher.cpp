#include "alloc/stitcher.hpp"

#include <algorithm>

#include "common/expects.hpp"

namespace streamsafe::detail {

stitcher::~stitcher() {
  try {
    unmap_finished(true);
    for (const auto& [base, slots] : live_) unmap(base, slots, slots);
    for (const physical_handle handle : packer_.remove_all()) source_.release_physical(handle, packer_.granularity());
  } catch (...) {
    // A failed device cannot unmap; the process's address space goes with it.
  }
}

stitched_window stitcher::stitch(const chunk_packer::plan& planned) {
  const std::size_t granularity = packer_.granularity();
  std::vector<physical_handle> fresh;
  try {
    fresh.reserve(planned.fresh_chunks);
    while (fresh.size() < planned.fresh_chunks) fresh.push_back(source_.create_physical(granularity));
  } catch (...) {
    for (const physical_handle handle : fresh) source_.release_physical(handle, granularity);
    throw;
  }
  // A new chunk is in no mapping yet; otherwise a dormant mapping may hold these chunks in order.
  chunk_packer::plan placed = planned;
  dormant_match match{dormant_.end(), 0};
  if (fresh.empty()) match = align_to_dormant(placed);
  stitched_window result;
  result.pieces = packer_.take(placed, fresh);
  std::vector<std::size_t> chunks(result.pieces.size());
  std::transform(result.pieces.begin(), result.pieces.end(), chunks.begin(), [](const chunk_piece& p) { return p.chunk; });
  if (fresh.empty() && match.first == dormant_.end()) match = find_dormant(chunks);
  if (match.first != dormant_.end()) {
    result.window = take_dormant(match.first);
    result.first_slot = match.second;
  } else {
    try {
      result.window = map_new(chunks);
    } catch (...) {
      packer_.give_back(result.pieces);
      for (std::size_t i = 0; i < planned.pieces.size(); ++i) {
        if (planned.pieces[i].fresh) source_.release_physical(packer_.remove_chunk(result.pieces[i].chunk), granularity);
      }
      throw;
    }
  }
  live_.emplace(result.window.base, result.window.chunks.size());
  return result;
}

chunk_mapping stitcher::map_new(const std::vector<std::size_t>& chunks) {
  const std::size_t granularity = packer_.granularity();
  chunk_mapping mapping{windows_.acquire(chunks.size()), chunks};
  std::size_t mapped = 0;
  try {
    for (const std::size_t chunk : chunks) {
      source_.map_physical(mapping.base + mapped * granularity, packer_.handle(chunk), granularity);
      ++mapped;
    }
    source_.grant_access(mapping.base, mapped * granularity);
  } catch (...) {
    unmap(mapping.base, mapped, chunks.size());
    throw;
  }
  return mapping;
}

stitcher::dormant_match stitcher::align_to_dormant(chunk_packer::plan& planned) {
  constexpr std::size_t looks = 16;  // bounded, as find_dormant
  std::vector<chunk_piece*> pieces;
  std::vector<bool> interchangeable_at;
  for (chunk_packer::planned_piece& p : planned.pieces) {
    pieces.push_back(&p.piece);
    interchangeable_at.push_back(packer_.is_wholly_free(p.piece.chunk));
  }
  const auto interchangeable = [&](std::size_t i) { return interchangeable_at[i]; };
  // Whether `mapping`, from slot `first` on, holds the plan's fixed chunks where the plan has
  // them and distinct wholly free chunks elsewhere; if so, the plan takes those.
  const auto adopt = [&](const std::vector<std::size_t>& slots, std::ptrdiff_t first) {
    if (first < 0 || static_cast<std::size_t>(first) + pieces.size() > slots.size()) return false;
    std::vector<std::size_t> chosen;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      const std::size_t chunk = slots[static_cast<std::size_t>(first) + i];
      if (!interchangeable(i)) {
        if (chunk != pieces[i]->chunk) return false;
      } else if (!packer_.is_wholly_free(chunk) || std::find(chosen.begin(), chosen.end(), chunk) != chosen.end()) {
        return false;
      } else {
        chosen.push_back(chunk);
      }
    }
    for (std::size_t i = 0, next = 0; i < pieces.size(); ++i) {
      if (interchangeable(i)) pieces[i]->chunk = chosen[next++];
    }
    return true;
  };
  std::size_t anchor = 0;
  while (anchor < pieces.size() && interchangeable(anchor)) ++anchor;
  std::size_t looked = 0;
  if (anchor < pieces.size()) {  // a partly used chunk pins where the plan sits in a mapping
    auto [first, last] = dormant_by_chunk_.equal_range(pieces[anchor]->chunk);
    for (; first != last && looked < looks; ++first, ++looked) {
      const std::vector<std::size_t>& slots = first->second->chunks;
      for (std::size_t slot = 0; slot < slots.size(); ++slot) {
        const auto start = static_cast<std::ptrdiff_t>(slot) - static_cast<std::ptrdiff_t>(anchor);
        if (slots[slot] == pieces[anchor]->chunk && adopt(slots, start)) {
          return {first->second, static_cast<std::size_t>(start)};
        }
      }
    }
    return {dormant_.end(), 0};
  }
  for (auto it = dormant_.rbegin(); it != dormant_.rend() && looked < looks; ++it, ++looked) {  // newest first
    for (std::size_t slot = 0; slot + pieces.size() <= it->chunks.size(); ++slot) {
      if (adopt(it->chunks, static_cast<std::ptrdiff_t>(slot))) return {std::prev(it.base()), slot};
    }
  }
  return {dormant_.end(), 0};
}

stitcher::dormant_match stitcher::find_dormant(const std::vector<std::size_t>& chunks) {
  constexpr int looks = 16;  // bounded: a match saves map calls, it need not be found at all costs
  auto [first, last] = dormant_by_chunk_.equal_range(chunks.front());
  for (int look = 0; first != last && look < looks; ++first, ++look) {
    const std::vector<std::size_t>& slots = first->second->chunks;
    for (std::size_t slot = 0; slot + chunks.size() <= slots.size(); ++slot) {
      if (std::equal(chunks.begin(), chunks.end(), slots.begin() + static_cast<std::ptrdiff_t>(slot))) {
        return {first->second, slot};
      }
    }
  }
  return {dormant_.end(), 0};
}

void stitcher::dissolve(stitched_window window) {
  packer_.give_back(window.pieces);
  live_.erase(window.window.base);
  dormant_.push_back(std::move(window.window));
  const auto it = std::prev(dormant_.end());
  std::vector<std::size_t> distinct = it->chunks;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (const std::size_t chunk : distinct) dormant_by_chunk_.emplace(chunk, it);
}

chunk_mapping stitcher::take_dormant(dormant_list::iterator it) {
  for (const std::size_t chunk : it->chunks) {
    auto [first, last] = dormant_by_chunk_.equal_range(chunk);
    for (; first != last; ++first) {
      if (first->second == it) {
        dormant_by_chunk_.erase(first);
        break;
      }
    }
  }
  chunk_mapping taken = std::move(*it);
  dormant_.erase(it);
  return taken;
}

void stitcher::retire(std::size_t keep, PooledEvent done) {
  retired_batch batch{std::move(done), {}};
  while (dormant_.size() > keep) {
    batch.mappings.push_back(take_dormant(dormant_.begin()));
  }
  if (!batch.mappings.empty()) retired_.push_back(std::move(batch));
}

void stitcher::unmap_finished(bool idle) {
  if (idle) {
    while (!dormant_.empty()) {
      const chunk_mapping mapping = take_dormant(dormant_.begin());
      unmap(mapping.base, mapping.chunks.size(), mapping.chunks.size());
    }
  }
  std::erase_if(retired_, [&](retired_batch& batch) {
    if (!idle && !batch.done.query()) return false;
    for (const chunk_mapping& mapping : batch.mappings) unmap(mapping.base, mapping.chunks.size(), mapping.chunks.size());
    return true;
  });
}

void stitcher::unmap(std::uintptr_t base, std::size_t mapped, std::size_t slots) {
  const std::size_t granularity = packer_.granularity();
  for (std::size_t i = 0; i < mapped; ++i) source_.unmap_physical(base + i * granularity, granularity);
  windows_.give_back(base, slots);
}

std::size_t stitcher::release_free_chunks() {
  const std::vector<physical_handle> released = packer_.remove_wholly_free();
  for (const physical_handle handle : released) source_.release_physical(handle, packer_.granularity());
  return released.size();
}

}  // namespace streamsafe::detail
