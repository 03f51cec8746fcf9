// A few host threads that run the producer's callbacks, so staging the next batches overlaps the
// device work of the current ones. Started by a run and joined at its end: no thread outlives it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace streamsafe::pipeline::detail {

/// Thread-safe. The destructor runs what was queued, then joins every thread.
class host_pool {
 public:
  explicit host_pool(std::size_t threads);
  ~host_pool();
  host_pool(const host_pool&) = delete;
  host_pool& operator=(const host_pool&) = delete;

  /// Runs `task` on a pool thread; the future carries its exception.
  [[nodiscard]] std::future<void> submit(std::function<void()> task);

 private:
  void serve();
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace streamsafe::pipeline::detail
