// Interned (op name, source location) pairs. Hot state stores the small label_id; the text is
// looked up only when a report is built (as TSan's stack depot does for stacks).
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "streamsafe/hazard/ids.hpp"

namespace streamsafe::hazard::detail {

class label_table {
 public:
  [[nodiscard]] label_id intern(std::string_view op_name, std::string_view loc);
  [[nodiscard]] std::string_view op_name(label_id label) const { return entries_.at(index(label)).op_name; }
  [[nodiscard]] std::string_view loc(label_id label) const { return entries_.at(index(label)).loc; }

 private:
  struct entry {
    std::string op_name;
    std::string loc;
  };
  [[nodiscard]] static std::size_t index(label_id label) noexcept { return static_cast<std::size_t>(label); }

  std::vector<entry> entries_;
  std::unordered_map<std::string, label_id> ids_;  // key: op name, '\0', loc
  std::string key_;                                // reused to build keys without allocating
};

}  // namespace streamsafe::hazard::detail
