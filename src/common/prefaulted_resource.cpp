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
    // Room to retire the region without allocating: release() cannot fail.
    retiring_.reserve(retiring_.size() + 1);
    // Huge pages: a burst over small fresh ones spent most of a switch in page faults, even
    // prepared, as the burst comes soon after the proposal and meets pages the helper has not
    // reached (docs/allocator.md, "The switch's memory").
    current_.pages = std::make_shared<reserved_pages>(bytes);
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
  // The bytes no allocation took go back now, and a helper still faulting them in stops.
  current_.pages->discard_from(current_.outstanding != 0 ? current_.used : 0);
  if (current_.outstanding != 0) retiring_.push_back(std::move(current_));  // room reserved by prepare()
  current_ = {};
}

void* prefaulted_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  if (current_.pages != nullptr) {
    // The pages start on reserved_pages::alignment: alignments up to it hold inside them.
    const std::size_t start = (current_.used + alignment - 1) / alignment * alignment;
    if (alignment <= reserved_pages::alignment && start < current_.pages->bytes() && bytes <= current_.pages->bytes() - start) {
      current_.used = start + bytes;
      ++current_.outstanding;
      return static_cast<char*>(current_.pages->base()) + start;
    }
  }
  return std::pmr::new_delete_resource()->allocate(bytes, alignment);
}

void prefaulted_resource::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) {
  if (current_.holds(p)) {
    // Nothing taken from the pages is in use: the next burst starts at their beginning again.
    if (--current_.outstanding == 0) current_.used = 0;
    return;
  }
  for (auto r = retiring_.begin(); r != retiring_.end(); ++r) {
    if (!r->holds(p)) continue;
    if (--r->outstanding == 0) retiring_.erase(r);  // its pages are unmapped with it
    return;
  }
  std::pmr::new_delete_resource()->deallocate(p, bytes, alignment);
}

}  // namespace streamsafe::detail
