#include "common/huge_page_array.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace streamsafe::detail {

namespace {
constexpr std::size_t huge_page = std::size_t{2} << 20;
}

reserved_pages reserve_pages(std::size_t bytes) {
  // Over-reserve by one huge page so an aligned start exists inside, then give back the rest:
  // the kernel backs a range with huge pages only where they fit aligned.
  const std::size_t rounded = (bytes + huge_page - 1) / huge_page * huge_page;
  void* raw = mmap(nullptr, rounded + huge_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (start + huge_page - 1) / huge_page * huge_page;
  if (aligned > start) munmap(raw, aligned - start);
  if (const std::size_t tail = start + huge_page - aligned; tail > 0) {
    munmap(reinterpret_cast<void*>(aligned + rounded), tail);
  }
  void* base = reinterpret_cast<void*>(aligned);
  // Advice only: where the kernel does not give huge pages, the array works in small ones.
  (void)madvise(base, rounded, MADV_HUGEPAGE);
  return {base, rounded};
}

void release_pages(const reserved_pages& pages) noexcept {
  if (pages.base != nullptr) munmap(pages.base, pages.bytes);
}

}  // namespace streamsafe::detail
