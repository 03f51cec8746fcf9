#include "common/prefaulted_resource.hpp"

#include <cstdint>
#include <new>

namespace streamsafe::detail {

bool prefaulted_resource::region::holds(const void* p) const noexcept {
  if (pages == nullptr) return false;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const auto base = reinterpret_cast<std::uintptr_t>(pages->base());
  return at >= base && at < base + pages->bytes();
}

prefaulted_resource::~prefaulted_resource() = default;

void prefaulted_resource::prepare(std::size_t bytes) noexcept {
  release();
  if (bytes == 0) return;
  try {
    // Small pages: finding huge ones can cost milliseconds each where memory is fragmented.
    current_.pages = std::make_shared<reserved_pages>(bytes, /*huge=*/false);
  } catch (const std::bad_alloc&) {
    return;  // allocations come from the heap, as unprepared
  }
  populate_later(current_.pages, 0, current_.pages->bytes());
}

std::size_t prefaulted_resource::prepared() const noexcept {
  return current_.pages == nullptr ? 0 : current_.pages->bytes();
}

void prefaulted_resource::release() noexcept {
  if (current_.pages == nullptr) return;
  if (current_.outstanding != 0) {
    try {
      retiring_.push_back(current_);
    } catch (const std::bad_alloc&) {
      return;  // no room to remember it: it goes on serving, which is only less tidy
    }
  }
  current_ = {};
}

void* prefaulted_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (current_.pages != nullptr) {
    const std::size_t start = (current_.used + alignment - 1) / alignment * alignment;
    if (start <= current_.pages->bytes() && bytes <= current_.pages->bytes() - start) {
      current_.used = start + bytes;
      ++current_.outstanding;
      return static_cast<char*>(current_.pages->base()) + start;
    }
  }
  return std::pmr::get_default_resource()->allocate(bytes, alignment);
}

void prefaulted_resource::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) {
  if (current_.holds(p)) {
    --current_.outstanding;
    return;
  }
  for (auto r = retiring_.begin(); r != retiring_.end(); ++r) {
    if (!r->holds(p)) continue;
    if (--r->outstanding == 0) retiring_.erase(r);  // its pages are unmapped with it
    return;
  }
  std::pmr::get_default_resource()->deallocate(p, bytes, alignment);
}

}  // namespace streamsafe::detail
