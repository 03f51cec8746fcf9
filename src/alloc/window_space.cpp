#include "alloc/window_space.hpp"

#include <algorithm>

#include "alloc/size_classes.hpp"

namespace streamsafe::detail {

window_space::~window_space() {
  for (const auto& [address, bytes] : reserved_) source_.free_range(address, bytes);
}

std::uintptr_t window_space::acquire(std::size_t chunks) {
  const std::size_t bytes = chunks * granularity_;
  auto fit = free_by_size_.lower_bound(bytes);
  if (fit == free_by_size_.end()) {
    const std::size_t range = round_up(next_range_bytes(bytes, reserved_bytes_, reserve_bytes_), granularity_);
    const std::uintptr_t address = source_.reserve(range);
    reserved_.emplace_back(address, range);
    reserved_bytes_ += range;
    insert_free(address, range);
    fit = free_by_size_.lower_bound(bytes);
  }
  const std::uintptr_t address = fit->second;
  const std::size_t available = fit->first;
  erase_free(free_by_address_.find(address));
  if (available > bytes) insert_free(address + bytes, available - bytes);
  return address;
}

void window_space::give_back(std::uintptr_t address, std::size_t chunks) {
  std::size_t bytes = chunks * granularity_;
  // Coalesce with free neighbours of the same reserved range: two ranges may happen to touch,
  // but a window across them could not be granted access in one call.
  auto right = free_by_address_.lower_bound(address);
  if (right != free_by_address_.end() && right->first == address + bytes && !starts_range(right->first)) {
    bytes += right->second;
    erase_free(right);
  }
  auto left = free_by_address_.lower_bound(address);
  if (left != free_by_address_.begin() && !starts_range(address)) {
    --left;
    if (left->first + left->second == address) {
      address = left->first;
      bytes += left->second;
      erase_free(left);
    }
  }
  insert_free(address, bytes);
}

bool window_space::starts_range(std::uintptr_t address) const noexcept {
  return std::any_of(reserved_.begin(), reserved_.end(), [&](const auto& range) { return range.first == address; });
}

void window_space::insert_free(std::uintptr_t address, std::size_t bytes) {
  free_by_address_.emplace(address, bytes);
  free_by_size_.emplace(bytes, address);
}

void window_space::erase_free(std::map<std::uintptr_t, std::size_t>::iterator it) {
  auto [first, last] = free_by_size_.equal_range(it->second);
  for (; first != last; ++first) {
    if (first->second == it->first) {
      free_by_size_.erase(first);
      break;
    }
  }
  free_by_address_.erase(it);
}

}  // namespace streamsafe::detail
