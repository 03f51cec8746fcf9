// A fixed-capacity array of trivially copyable values for a log written front to back on a hot
// path. Its address space is reserved at once and advised for huge pages; the kernel backs it as
// it is touched. Each fresh page costs the writer a page fault when it first touches it, several
// microseconds in a virtual machine, and a log of 24-byte entries would meet one every 170
// appends. So a helper thread faults the pages of the next 2 MiB in while the writer fills the
// current ones (MADV_POPULATE_WRITE, which writes no byte): memory is backed just ahead of the
// writer, never the whole capacity up front.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <type_traits>

namespace streamsafe::detail {

/// Address space reserved for an array, aligned for huge pages; unmapped with its last owner
/// (the array, or a helper still faulting pages in).
class reserved_pages {
 public:
  /// Throws std::bad_alloc when the address space cannot be had. Advised for huge pages: one
  /// fault backs 2 MiB (a fresh small page costs microseconds to fault in a virtual machine),
  /// and a long-lived log takes fewer TLB misses.
  explicit reserved_pages(std::size_t bytes);
  ~reserved_pages();
  reserved_pages(const reserved_pages&) = delete;
  reserved_pages& operator=(const reserved_pages&) = delete;
  /// Where the reservation starts: a multiple of this (a huge page).
  static constexpr std::size_t alignment = std::size_t{2} << 20;
  [[nodiscard]] void* base() const noexcept { return base_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  /// Bytes from `offset` on are wanted no more: a helper faulting them in stops at its next
  /// step, and those backed go back to the kernel (their contents are lost).
  void discard_from(std::size_t offset) noexcept;
  [[nodiscard]] std::size_t wanted() const noexcept { return wanted_.load(std::memory_order_relaxed); }

 private:
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::atomic<std::size_t> wanted_{0};  // bytes from the start still wanted
};

/// Bytes faulted in ahead of the writer at a time.
inline constexpr std::size_t populate_step = std::size_t{2} << 20;

/// Faults [offset, offset + bytes) of `pages` in on a thread of its own, a step at a time,
/// clipped to their end and to what is still wanted (discard_from); nothing when the range lies
/// past the end or no thread can be started (the writer then faults the pages itself). The
/// contents are untouched, so the owner may write them meanwhile.
void populate_later(const std::shared_ptr<reserved_pages>& pages, std::size_t offset,
                    std::size_t bytes = populate_step) noexcept;

/// Not thread-safe. Elements stay where they are for the array's life (no reallocation).
template <typename T>
class huge_page_array {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  explicit huge_page_array(std::size_t capacity) : capacity_(capacity) {}
  huge_page_array(const huge_page_array&) = delete;
  huge_page_array& operator=(const huge_page_array&) = delete;

  /// The first push reserves the whole capacity (std::bad_alloc when it cannot).
  void push_back(const T& value) {
    if (pages_ == nullptr) start();
    if (size_ == next_populate_at_) populate_next();
    data()[size_++] = value;
  }
  void clear() noexcept { size_ = 0; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] T& operator[](std::size_t i) noexcept { return data()[i]; }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return data()[i]; }
  [[nodiscard]] T& back() noexcept { return data()[size_ - 1]; }
  [[nodiscard]] const T& back() const noexcept { return data()[size_ - 1]; }

 private:
  [[nodiscard]] T* data() const noexcept { return static_cast<T*>(data_); }
  void start() {
    pages_ = std::make_shared<reserved_pages>(capacity_ * sizeof(T));
    data_ = pages_->base();
    populate_later(pages_, 0);
    next_populate_at_ = 0;
  }
  /// Entering a step's entries: the step after it is faulted in meanwhile (once; a cleared log
  /// writes over pages already backed).
  void populate_next() {
    populated_ += populate_step;
    populate_later(pages_, populated_);
    next_populate_at_ = populated_ / sizeof(T);
  }

  std::size_t capacity_;
  std::size_t size_ = 0;
  std::shared_ptr<reserved_pages> pages_;
  void* data_ = nullptr;
  std::size_t populated_ = 0;  // where the last step asked to be faulted in begins
  std::size_t next_populate_at_ = ~std::size_t{0};
};

}  // namespace streamsafe::detail
