// A mutex for short critical sections on hot paths: lock is one atomic exchange when free and
// unlock is a plain release store, where std::mutex pays an atomic read-modify-write on both
// (on the H200 machine's host, such instructions are a large share of an allocation's cost).
// A waiter spins briefly, then yields its time slice, so a holder that blocks (a slow path
// that maps memory or synchronizes a stream) costs waiters CPU time, never a lost wake-up.
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace streamsafe::detail {

class spin_mutex {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) wait_until_free();
  }
  [[nodiscard]] bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  void wait_until_free() const noexcept {
    for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
      if (spins < spins_before_yield) {
        pause();
      } else {
        std::this_thread::yield();
      }
    }
  }
  static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }
  static constexpr int spins_before_yield = 64;
  std::atomic<bool> locked_{false};
};

}  // namespace streamsafe::detail
