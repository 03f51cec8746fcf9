// A fixed-capacity array of trivially copyable values, in address space reserved at once and
// backed by the kernel on first touch, in huge pages where it allows them. For a log written
// front to back on a hot path: each fresh 4 KiB page costs a page fault, several microseconds in
// a virtual machine, and a log of 40-byte entries meets one every hundred appends; a 2 MiB page
// meets one every fifty thousand. Untouched capacity is address space, not memory.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

namespace streamsafe::detail {

/// Address space reserved for an array, aligned for huge pages.
struct reserved_pages {
  void* base = nullptr;
  std::size_t bytes = 0;
};
/// Reserves at least `bytes`, aligned for huge pages; throws std::bad_alloc when it cannot.
[[nodiscard]] reserved_pages reserve_pages(std::size_t bytes);
void release_pages(const reserved_pages& pages) noexcept;

/// Not thread-safe. Elements stay where they are for the array's life (no reallocation).
template <typename T>
class huge_page_array {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  explicit huge_page_array(std::size_t capacity) : capacity_(capacity) {}
  ~huge_page_array() { release_pages(pages_); }
  huge_page_array(const huge_page_array&) = delete;
  huge_page_array& operator=(const huge_page_array&) = delete;

  /// The first push reserves the whole capacity (std::bad_alloc when it cannot).
  void push_back(const T& value) {
    if (pages_.base == nullptr) pages_ = reserve_pages(capacity_ * sizeof(T));
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
  [[nodiscard]] T* data() const noexcept { return static_cast<T*>(pages_.base); }

  std::size_t capacity_;
  std::size_t size_ = 0;
  reserved_pages pages_;
};

}  // namespace streamsafe::detail
