#include "runtime/sim/sim_arena.hpp"

#include <cstdlib>
#include <iterator>

#include "common/expects.hpp"

namespace streamsafe::detail {

namespace {
std::size_t round_up(std::size_t bytes, std::size_t to) { return (bytes + to - 1) / to * to; }
}  // namespace

void SimArena::free_deleter::operator()(std::byte* p) const noexcept { std::free(p); }

SimArena::SimArena(std::size_t capacity, std::string device_name)
    : capacity_(round_up(capacity, alignment)), device_name_(std::move(device_name)) {
  SS_EXPECTS(capacity_ > 0, device_name_, ": sim memory capacity must be positive");
  storage_.reset(static_cast<std::byte*>(std::aligned_alloc(alignment, capacity_)));
  if (!storage_) {
    throw out_of_memory(device_name_ + ": cannot reserve " + std::to_string(capacity_) +
                        " bytes of host memory for the simulated device");
  }
  free_ranges_.emplace(0, capacity_);
}

void* SimArena::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  std::lock_guard lock(mutex_);
  const std::size_t need = bytes > capacity_ ? bytes : round_up(bytes, alignment);
  for (auto it = free_ranges_.begin(); it != free_ranges_.end(); ++it) {
    if (it->second < need) continue;
    const auto [offset, size] = *it;
    free_ranges_.erase(it);
    if (size > need) free_ranges_.emplace(offset + need, size - need);
    live_.emplace(offset, need);
    used_ += need;
    return storage_.get() + offset;
  }
  throw out_of_memory(device_name_ + ": cannot allocate " + std::to_string(bytes) + " bytes: capacity " +
                      std::to_string(capacity_) + ", in use " + std::to_string(used_) + ", largest free range " +
                      std::to_string(largest_free()));
}

void SimArena::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  auto* byte = static_cast<std::byte*>(ptr);
  std::lock_guard lock(mutex_);
  const bool inside = byte >= storage_.get() && byte < storage_.get() + capacity_;
  const auto offset = inside ? static_cast<std::size_t>(byte - storage_.get()) : 0;
  auto it = inside ? live_.find(offset) : live_.end();
  SS_EXPECTS(it != live_.end(), device_name_, ": deallocate(", ptr,
             "): not a live allocation of this device (double free, or a foreign pointer)");
  const std::size_t size = it->second;
  live_.erase(it);
  used_ -= size;
  insert_free(offset, size);
}

std::size_t SimArena::used() const {
  std::lock_guard lock(mutex_);
  return used_;
}

std::size_t SimArena::largest_free() const {
  std::size_t largest = 0;
  for (const auto& [offset, size] : free_ranges_) largest = size > largest ? size : largest;
  return largest;
}

void SimArena::insert_free(std::size_t offset, std::size_t size) {
  auto next = free_ranges_.lower_bound(offset);
  if (next != free_ranges_.end() && offset + size == next->first) {
    size += next->second;
    next = free_ranges_.erase(next);
  }
  if (next != free_ranges_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return;
    }
  }
  free_ranges_.emplace_hint(next, offset, size);
}

}  // namespace streamsafe::detail
