#include "alloc/pointer_table.hpp"

namespace streamsafe::detail {

namespace {
// Blocks are 512-byte aligned: drop those bits, then mix so neighbours spread over the table.
std::uint64_t mix(std::uintptr_t address) noexcept {
  std::uint64_t x = address >> 9;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}
}  // namespace

std::size_t pointer_table::shard_of(std::uintptr_t address) noexcept { return mix(address) % shard_count; }

std::size_t pointer_table::shard::home(std::uintptr_t address) const noexcept {
  return (mix(address) >> 6) & (slots.size() - 1);
}

std::size_t pointer_table::shard::locate(std::uintptr_t address) const noexcept {
  if (slots.empty()) return slots.size();
  for (std::size_t i = home(address);; i = (i + 1) & (slots.size() - 1)) {
    if (slots[i].address == address) return i;
    if (slots[i].address == 0) return slots.size();
  }
}

void pointer_table::shard::grow() {
  std::vector<slot> old(slots.empty() ? 64 : slots.size() * 2);
  old.swap(slots);
  for (const slot& s : old) {
    if (s.address == 0) continue;
    std::size_t i = home(s.address);
    while (slots[i].address != 0) i = (i + 1) & (slots.size() - 1);
    slots[i] = s;
  }
}

// Backward-shift deletion keeps every probe chain unbroken without tombstones.
void pointer_table::shard::erase_at(std::size_t index) noexcept {
  const std::size_t mask = slots.size() - 1;
  std::size_t hole = index;
  for (std::size_t i = (index + 1) & mask; slots[i].address != 0; i = (i + 1) & mask) {
    const std::size_t want = home(slots[i].address);
    const bool movable = ((i - want) & mask) >= ((i - hole) & mask);
    if (movable) {
      slots[hole] = slots[i];
      hole = i;
    }
  }
  slots[hole] = slot{};
  --used;
}

void pointer_table::insert(std::uintptr_t address, block* b) {
  shard& s = shards_[shard_of(address)];
  std::lock_guard lock(s.mutex);
  if ((s.used + 1) * 2 > s.slots.size()) s.grow();
  std::size_t i = s.home(address);
  while (s.slots[i].address != 0) i = (i + 1) & (s.slots.size() - 1);
  s.slots[i] = slot{address, b};
  ++s.used;
}

block* pointer_table::take(std::uintptr_t address) noexcept {
  shard& s = shards_[shard_of(address)];
  std::lock_guard lock(s.mutex);
  const std::size_t i = s.locate(address);
  if (i == s.slots.size()) return nullptr;
  block* b = s.slots[i].value;
  s.erase_at(i);
  return b;
}

block* pointer_table::find(std::uintptr_t address) const noexcept {
  const shard& s = shards_[shard_of(address)];
  std::lock_guard lock(s.mutex);
  const std::size_t i = s.locate(address);
  return i == s.slots.size() ? nullptr : s.slots[i].value;
}

std::vector<block*> pointer_table::all() const {
  std::vector<block*> blocks;
  for (const shard& s : shards_) {
    std::lock_guard lock(s.mutex);
    for (const slot& entry : s.slots) {
      if (entry.address != 0) blocks.push_back(entry.value);
    }
  }
  return blocks;
}

}  // namespace streamsafe::detail
