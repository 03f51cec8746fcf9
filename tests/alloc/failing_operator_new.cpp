#include "failing_operator_new.hpp"

#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

thread_local std::size_t armed_bytes = 0;  // 0: not armed
thread_local int armed_nth = 0;
thread_local int seen = 0;
thread_local bool failed = false;

/// Every form of the global operator new below comes here, and every operator delete frees with
/// std::free: one allocator for the whole binary, so no sanitizer sees new paired with free.
void* allocate(std::size_t bytes, std::size_t alignment) noexcept {
  if (armed_bytes != 0 && bytes == armed_bytes && ++seen == armed_nth) {
    armed_bytes = 0;
    failed = true;
    return nullptr;
  }
  if (bytes == 0) bytes = 1;
  if (alignment <= alignof(std::max_align_t)) return std::malloc(bytes);
  return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
}

void* allocate_or_throw(std::size_t bytes, std::size_t alignment) {
  if (void* p = allocate(bytes, alignment)) return p;
  throw std::bad_alloc();
}

}  // namespace

namespace streamsafe::testing {

void fail_host_allocation(std::size_t bytes, int nth) noexcept {
  armed_bytes = bytes;
  armed_nth = nth;
  seen = 0;
  failed = false;
}

void disarm_host_allocation_failure() noexcept { armed_bytes = 0; }

bool host_allocation_failed() noexcept { return failed; }

}  // namespace streamsafe::testing

constexpr std::size_t plain = alignof(std::max_align_t);
void* operator new(std::size_t n) { return allocate_or_throw(n, plain); }
void* operator new[](std::size_t n) { return allocate_or_throw(n, plain); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, plain); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, plain); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate_or_throw(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
