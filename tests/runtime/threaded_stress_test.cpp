// Real concurrency on the threaded sim backend, run under ThreadSanitizer in CI: chains of
// waits across many streams and host threads must give exact results and no data race.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "backends.hpp"
#include "streamsafe/event_pool.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::testing {
namespace {

Device threaded_device() {
  return Device::sim({.memory_capacity = 16u << 20, .mode = sim_mode::threaded,
                      .starve_delay = std::chrono::microseconds(50)});
}

TEST(ThreadedSim, RelayAcrossStreamsThroughEventsIsExact) {
  Device device = threaded_device();
  constexpr int stream_count = 6;
  constexpr int rounds = 40;
  std::vector<Stream> streams;
  for (int i = 0; i < stream_count; ++i) {
    streams.emplace_back(device, i % 2 ? slow_stream("odd" + std::to_string(i))
                                       : stream_options{.name = "even" + std::to_string(i)});
  }
  EventPool pool(device);
  std::uint64_t counter = 0;  // touched only by ops ordered one after the other
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < stream_count; ++i) {
      auto& stream = streams[i];
      auto& previous = streams[(i + stream_count - 1) % stream_count];
      auto handoff = pool.acquire();
      handoff.record(previous);
      stream.wait(handoff);
      stream.launch(kernel{.name = "increment", .sim = [&counter] { ++counter; }});
    }
  }
  device.synchronize();
  EXPECT_EQ(counter, std::uint64_t{stream_count} * rounds);
}

TEST(ThreadedSim, ManyHostThreadsShareOneDevice) {
  Device device = threaded_device();
  EventPool pool(device);
  constexpr int threads = 4;
  std::atomic<int> done{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      Stream mine(device, {.name = "host" + std::to_string(t)});
      Stream helper(device, slow_stream("helper" + std::to_string(t)));
      std::vector<std::uint32_t> data(64, 0);
      for (std::uint32_t round = 1; round <= 20; ++round) {
        helper.launch(kernel{.name = "write", .sim = [&data, round] { std::fill(data.begin(), data.end(), round); }});
        auto written = pool.acquire();
        written.record(helper);
        mine.wait(written);
        mine.launch(kernel{.name = "check", .sim = [&data, round, &done] {
                             if (std::all_of(data.begin(), data.end(), [&](auto v) { return v == round; })) ++done;
                           }});
        mine.synchronize();
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(done.load(), threads * 20);
}

}  // namespace
}  // namespace streamsafe::testing
