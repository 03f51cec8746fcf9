#include "common/huge_page_array.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <new>
#include <thread>

namespace streamsafe::detail {

namespace {
constexpr std::size_t huge_page = reserved_pages::alignment;
}

reserved_pages::reserved_pages(std::size_t bytes) {
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
  base_ = reinterpret_cast<void*>(aligned);
  bytes_ = rounded;
  wanted_.store(rounded, std::memory_order_relaxed);
  // Advice only: where the kernel gives no huge pages, the array works in small ones.
  (void)madvise(base_, bytes_, MADV_HUGEPAGE);
}

void reserved_pages::discard_from(std::size_t offset) noexcept {
  constexpr std::size_t page = 4096;
  const std::size_t from = std::min((offset + page - 1) / page * page, bytes_);
  if (from >= wanted_.load(std::memory_order_relaxed)) return;
  wanted_.store(from, std::memory_order_relaxed);
  (void)madvise(static_cast<char*>(base_) + from, bytes_ - from, MADV_DONTNEED);
}

reserved_pages::~reserved_pages() { munmap(base_, bytes_); }

void populate_later(const std::shared_ptr<reserved_pages>& pages, std::size_t offset, std::size_t bytes) noexcept {
#ifdef MADV_POPULATE_WRITE
  if (offset >= pages->bytes()) return;
  try {
    // Detached, holding a share of the pages: they stay mapped until it is done.
    std::thread([pages, offset, bytes] {
      const std::size_t end = offset + std::min(bytes, pages->bytes() - offset);
      for (std::size_t at = offset; at < std::min(end, pages->wanted()); at += populate_step) {
        const std::size_t step = std::min(populate_step, end - at);
        (void)madvise(static_cast<char*>(pages->base()) + at, step, MADV_POPULATE_WRITE);
      }
    }).detach();
  } catch (...) {
    // No thread: the writer faults these pages in itself.
  }
#else
  (void)pages;
  (void)offset;
  (void)bytes;
#endif
}

}  // namespace streamsafe::detail
