// Host memory faulted in ahead, for allocations that are known to come in a burst (the switch to
// a repeat plan builds tens of megabytes of them at one request). The thread that first touches
// a fresh page pays a page fault, microseconds in a virtual machine, so a burst over fresh memory
// spends much of its time in the kernel. Prepared ahead, the pages are faulted in on a helper
// thread while the owner goes on, and the burst finds them backed.
#pragma once

#include <cstddef>
#include <memory>
#include <memory_resource>
#include <vector>

#include "common/huge_page_array.hpp"

namespace streamsafe::detail {

/// Serves allocations from the prepared pages, one after another, while they last, then from
/// the heap (operator new, whatever the default memory resource); once everything taken from
/// the pages is given back, they serve from their beginning again. Pages are given back only
/// when everything taken from them is: a pmr container can hold its storage from them for as
/// long as it likes.
///
/// Not thread-safe: the owner serializes its calls and its containers' (the helper only faults
/// pages in, leaving their contents alone).
class prefaulted_resource final : public std::pmr::memory_resource {
 public:
  prefaulted_resource() = default;
  prefaulted_resource(const prefaulted_resource&) = delete;
  prefaulted_resource& operator=(const prefaulted_resource&) = delete;
  ~prefaulted_resource() override;

  /// Reserves `bytes` of address space and starts faulting them in on a helper thread. The
  /// pages prepared before go back now if nothing taken from them is in use, else once it is
  /// given back. Best effort: where no address space or thread can be had, allocations come
  /// from the heap, as unprepared.
  void prepare(std::size_t bytes) noexcept;
  /// The bytes of the pages allocations are served from now (0: the heap).
  [[nodiscard]] std::size_t prepared() const noexcept;
  /// No allocation comes from the prepared pages any more: the bytes none took go back now,
  /// the rest once nothing taken from them is in use.
  void release() noexcept;

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override;
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override;
  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
    return this == &other;
  }

  /// One reservation, and how many allocations from it are still in use.
  struct region {
    std::shared_ptr<reserved_pages> pages;
    std::size_t used = 0;         // bytes handed out, from the start
    std::size_t outstanding = 0;  // allocations not given back
    [[nodiscard]] bool holds(const void* p) const noexcept;
  };
  region current_;                 // served from
  std::vector<region> retiring_;  // each given back once its outstanding allocations are
};

}  // namespace streamsafe::detail
