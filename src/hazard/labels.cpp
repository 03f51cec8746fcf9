#include "hazard/labels.hpp"

namespace streamsafe::hazard::detail {

label_id label_table::intern(std::string_view op_name, std::string_view loc) {
  key_.assign(op_name);
  key_.push_back('\0');
  key_.append(loc);
  if (auto it = ids_.find(key_); it != ids_.end()) return it->second;
  const label_id id{static_cast<std::uint32_t>(entries_.size())};
  entries_.push_back(entry{std::string(op_name), std::string(loc)});
  ids_.emplace(key_, id);
  return id;
}

}  // namespace streamsafe::hazard::detail
