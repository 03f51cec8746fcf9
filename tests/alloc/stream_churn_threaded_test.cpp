// Streams that come and go on several threads at once, on the threaded sim: pools are retired
// while other threads allocate, free, record and borrow (run under ThreadSanitizer in CI).
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe {
namespace {

using testing::read_back;

constexpr std::size_t mib = std::size_t{1} << 20;

TEST(StreamChurnThreaded, RequestsOnManyThreadsKeepTheirBytesAndMemoryBounded) {
  Device device = Device::sim(sim_options{.memory_capacity = 256 * mib, .mode = sim_mode::threaded});
  caching_allocator alloc(device);
  Stream shared(device, stream_options{.name = "shared"});
  constexpr int threads = 4;
  constexpr int requests = 200;
  std::vector<std::thread> workers;
  std::vector<std::size_t> wrong(threads, 0);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < requests; ++i) {
        Stream request(device, stream_options{.name = "request"});
        const auto value = static_cast<std::uint8_t>(t * 16 + i % 16);
        auto* p = static_cast<std::uint32_t*>(alloc.allocate(mib, request));
        request.fill(p, value, mib);
        for (const std::uint32_t w : read_back(request, p, 1024)) wrong[t] += w != 0x01010101u * value ? 1 : 0;
        if (i % 3 == 0) {  // another stream reads it too, and the free waits for that stream
          shared.wait(request);
          alloc.record_stream(p, shared);
        }
        alloc.deallocate(p);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(wrong[t], 0u) << "thread " << t;
  shared.synchronize();
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes.current, 0) << "every gone stream's cache goes back";
  EXPECT_EQ(alloc.stats().pending_free_blocks, 0);
}

}  // namespace
}  // namespace streamsafe
