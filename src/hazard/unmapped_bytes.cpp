#include "hazard/unmapped_bytes.hpp"

#include <algorithm>
#include <vector>

namespace streamsafe::hazard::detail {

namespace {

void retire_once(std::vector<retired_access>& into, const retired_access& old) {
  if (std::find(into.begin(), into.end(), old) == into.end()) into.push_back(old);
}

[[nodiscard]] bool seen(const vector_clock& host, const retired_access& old) noexcept {
  return host.covers(old.access.agent, old.access.time);
}

}  // namespace

void unmapped_bytes::take(interval_map<shadow_cell>& shadow, byte_range range, const vector_clock& host) {
  forget_seen(host);
  shadow.update(range, [&](shadow_cell& cell, byte_range piece) {
    if (cell.state == lifetime_state::live) return;
    std::erase_if(cell.retired, [&](const retired_access& old) { return seen(host, old); });
    if (cell.retired.empty()) return;
    const byte_range offsets{piece.first - range.first, piece.size};
    kept_.update(offsets, [&](shadow_cell& kept, byte_range) {
      for (const retired_access& old : cell.retired) retire_once(kept.retired, old);
      kept.freed_by = cell.freed_by;
    });
    kept_end_ = std::max(kept_end_, offsets.end());
    cell.retired.clear();
    cell.allocated.reset();
  });
}

void unmapped_bytes::give(interval_map<shadow_cell>& shadow, byte_range range, const vector_clock& host) {
  forget_seen(host);
  kept_.visit({0, range.size}, [&](const shadow_cell& kept, byte_range offsets) {
    if (kept.retired.empty()) return;
    shadow.update({range.first + offsets.first, offsets.size}, [&](shadow_cell& cell, byte_range) {
      if (cell.state == lifetime_state::live) return;
      cell.state = lifetime_state::freed;
      cell.freed_by = kept.freed_by;
      for (const retired_access& old : kept.retired) retire_once(cell.retired, old);
    });
  });
}

void unmapped_bytes::forget_seen(const vector_clock& host) {
  if (kept_end_ == 0) return;
  kept_.update({0, kept_end_}, [&](shadow_cell& kept, byte_range) {
    std::erase_if(kept.retired, [&](const retired_access& old) { return seen(host, old); });
    if (kept.retired.empty()) kept = shadow_cell{};
  });
}

}  // namespace streamsafe::hazard::detail
