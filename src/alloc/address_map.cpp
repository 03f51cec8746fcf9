#include "alloc/address_map.hpp"

namespace streamsafe::detail {

// Blocks are 512-byte aligned: drop those bits, then mix so neighbours spread over the table.
std::size_t address_map::home(std::uintptr_t address) const noexcept {
  std::uint64_t x = address >> 9;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x & (slots_.size() - 1);
}

std::size_t address_map::locate(std::uintptr_t address) const noexcept {
  if (slots_.empty()) return 0;
  for (std::size_t i = home(address);; i = (i + 1) & (slots_.size() - 1)) {
    if (slots_[i].address == address) return i;
    if (slots_[i].address == 0) return slots_.size();
  }
}

void address_map::grow() {
  std::vector<slot> old(slots_.empty() ? 64 : slots_.size() * 2);
  old.swap(slots_);
  for (const slot& s : old) {
    if (s.address == 0) continue;
    std::size_t i = home(s.address);
    while (slots_[i].address != 0) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
}

void address_map::erase_at(std::size_t index) noexcept {
  const std::size_t mask = slots_.size() - 1;
  std::size_t hole = index;
  for (std::size_t i = (index + 1) & mask; slots_[i].address != 0; i = (i + 1) & mask) {
    const std::size_t want = home(slots_[i].address);
    const bool movable = ((i - want) & mask) >= ((i - hole) & mask);
    if (movable) {
      slots_[hole] = slots_[i];
      hole = i;
    }
  }
  slots_[hole] = slot{};
  --used_;
}

void address_map::insert(std::uintptr_t address, block* b) {
  if ((used_ + 1) * 2 > slots_.size()) grow();
  std::size_t i = home(address);
  while (slots_[i].address != 0) i = (i + 1) & (slots_.size() - 1);
  slots_[i] = slot{address, b};
  ++used_;
}

block* address_map::take(std::uintptr_t address) noexcept {
  const std::size_t i = locate(address);
  if (i == slots_.size()) return nullptr;
  block* b = slots_[i].value;
  erase_at(i);
  return b;
}

block* address_map::find(std::uintptr_t address) const noexcept {
  const std::size_t i = locate(address);
  return i == slots_.size() ? nullptr : slots_[i].value;
}

}  // namespace streamsafe::detail
