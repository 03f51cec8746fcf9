#include "failing_operator_new.hpp"

#include <cstdlib>
#include <new>

namespace {

thread_local std::size_t armed_bytes = 0;  // 0: not armed
thread_local int armed_nth = 0;
thread_local int seen = 0;
thread_local bool failed = false;

void* allocate_or_fail(std::size_t bytes) {
  if (armed_bytes != 0 && bytes == armed_bytes && ++seen == armed_nth) {
    armed_bytes = 0;
    failed = true;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
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

void* operator new(std::size_t bytes) { return allocate_or_fail(bytes); }
void* operator new[](std::size_t bytes) { return allocate_or_fail(bytes); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
