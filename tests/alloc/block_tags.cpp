#include "block_tags.hpp"

#include <cstring>
#include <sstream>

namespace streamsafe::testing {

namespace {

template <typename Visit>
void for_each_tag_slot(const tagged_block& b, Visit visit) {
  auto* bytes = static_cast<unsigned char*>(b.ptr);
  for (std::size_t offset = 0; offset + sizeof(std::uint64_t) <= b.rounded; offset += 64 << 10) visit(bytes, offset);
  visit(bytes, b.rounded - sizeof(std::uint64_t));
}

}  // namespace

void tag_failures::note(const void* block, std::size_t offset, std::uint64_t seen, std::uint64_t expected) {
  if (count_.fetch_add(1) != 0) return;
  std::ostringstream out;
  out << "block " << block << " (tag " << expected << ") holds " << seen << " at offset " << offset;
  std::lock_guard lock(mutex_);
  first_ = out.str();
}

std::string tag_failures::first() const {
  std::lock_guard lock(mutex_);
  return first_;
}

kernel write_tags(const tagged_block& block) {
  return kernel{"write_tags", {}, [block] {
                  for_each_tag_slot(block, [&](unsigned char* bytes, std::size_t offset) {
                    std::memcpy(bytes + offset, &block.tag, sizeof block.tag);
                  });
                }};
}

kernel check_tags(const tagged_block& block, tag_failures& failures) {
  return kernel{"check_tags", {}, [block, &failures] {
                  for_each_tag_slot(block, [&](const unsigned char* bytes, std::size_t offset) {
                    std::uint64_t seen = 0;
                    std::memcpy(&seen, bytes + offset, sizeof seen);
                    if (seen != block.tag) failures.note(block.ptr, offset, seen, block.tag);
                  });
                }};
}

}  // namespace streamsafe::testing
