// The torch allocator's C ABI called from many threads at once, as torch's autograd and data
// loader threads do: run under ThreadSanitizer (label `threaded`).
#include <gtest/gtest.h>

#include <barrier>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "instance.hpp"
#include "sim_torch_backend.hpp"
#include "stream_registry.hpp"
#include "streamsafe_torch_alloc.h"

namespace streamsafe::torch_alloc::testing {
namespace {

TEST(TorchAllocThreaded, ConcurrentAllocationsFreesRecordsAndStatsStayConsistent) {
  auto state = std::make_shared<sim_torch_state>();
  state->device = Device::sim(sim_options{.mode = sim_mode::threaded});
  replace_instance(sim_torch_backend(state));
  constexpr int threads = 4;
  constexpr int rounds = 400;
  std::vector<std::thread> workers;
  std::barrier start(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([t, &start] {
      const native_stream shared = fake_handle(per_thread_stream_handle);
      std::vector<streamsafe_torch_stat> stats(streamsafe_torch_stats(0, nullptr, 0));
      start.arrive_and_wait();
      for (int i = 0; i < rounds; ++i) {
        // A new stream every 25 rounds: adoptions keep happening while other threads look up.
        const native_stream own = fake_handle(0x10000 * static_cast<std::uintptr_t>(t + 1) + 0x10 * (i / 25));
        const auto size = static_cast<ssize_t>(512 * (1 + (i * 7 + t) % 64));
        void* a = streamsafe_torch_malloc(size, 0, own);
        void* b = streamsafe_torch_malloc(size, 0, shared);
        streamsafe_torch_record_stream(a, shared);
        streamsafe_torch_free(a, size, 0, own);
        streamsafe_torch_free(b, size, 0, shared);
        if (i % 50 == 0) (void)streamsafe_torch_stats(0, stats.data(), stats.size());
      }
    });
  }
  for (auto& worker : workers) worker.join();
  streamsafe_torch_empty_cache();
  std::vector<streamsafe_torch_stat> stats(streamsafe_torch_stats(0, nullptr, 0));
  (void)streamsafe_torch_stats(0, stats.data(), stats.size());
  for (const auto& [key, value] : stats) {
    if (std::string(key) == "allocation.all.allocated") EXPECT_EQ(value, 2 * threads * rounds);
    if (std::string(key) == "allocated_bytes.all.current") EXPECT_EQ(value, 0);
  }
  replace_instance(sim_torch_backend(std::make_shared<sim_torch_state>()));
}

}  // namespace
}  // namespace streamsafe::torch_alloc::testing
