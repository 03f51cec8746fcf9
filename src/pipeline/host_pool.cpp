#include "host_pool.hpp"

namespace streamsafe::pipeline::detail {

host_pool::host_pool(std::size_t threads) {
  threads_.reserve(threads);
  for (std::size_t t = 0; t < threads; ++t) threads_.emplace_back([this] { serve(); });
}

host_pool::~host_pool() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

std::future<void> host_pool::submit(std::function<void()> task) {
  std::packaged_task<void()> packaged(std::move(task));
  std::future<void> done = packaged.get_future();
  {
    const std::lock_guard lock(mutex_);
    queue_.push_back(std::move(packaged));
  }
  ready_.notify_one();
  return done;
}

void host_pool::serve() {
  for (;;) {
    std::packaged_task<void()> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace streamsafe::pipeline::detail
