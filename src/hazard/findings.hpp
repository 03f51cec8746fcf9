// The conflicts found during one engine call, before they become reports: one per pair of
// conflicting ops (kind + earlier op), with the conflicting bytes merged into their hull.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "hazard/shadow_cell.hpp"
#include "streamsafe/hazard/hazard.hpp"

namespace streamsafe::hazard::detail {

struct finding {
  hazard_kind kind = hazard_kind::race;
  access_record first;
  access_mode second_mode = access_mode::read;
  byte_range range;
  free_record freed_by;
  std::optional<access_record> allocation;  // reuse_race off the allocation stream: its allocation
};

class findings {
 public:
  void clear() noexcept { found_.clear(); }
  void note(hazard_kind kind, const access_record& first, access_mode second_mode, byte_range piece,
            const free_record& freed_by, const access_record* allocation) {
    for (auto& seen : found_) {
      if (seen.kind == kind && seen.first == first) {
        const auto first_byte = std::min(seen.range.first, piece.first);
        seen.range = byte_range{first_byte, std::max(seen.range.end(), piece.end()) - first_byte};
        return;
      }
    }
    found_.push_back(finding{kind, first, second_mode, piece, freed_by,
                             allocation != nullptr ? std::optional(*allocation) : std::nullopt});
  }
  [[nodiscard]] const std::vector<finding>& all() const noexcept { return found_; }

 private:
  std::vector<finding> found_;  // a handful at most per op: a linear search is the fast one
};

}  // namespace streamsafe::hazard::detail
