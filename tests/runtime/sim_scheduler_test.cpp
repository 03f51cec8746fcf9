// The sim backend's own promises: a seed fixes the interleaving, starved streams lose races,
// and a missing wait is exposed every time while the fixed program is never wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "backends.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::testing {
namespace {

/// Runs three streams of tagged ops and returns the order in which the ops ran.
std::vector<int> run_order(std::uint64_t seed, unsigned background_steps = 0) {
  Device device = Device::sim({.mode = sim_mode::deterministic, .seed = seed,
                               .max_background_steps = background_steps});
  std::vector<int> order;
  std::vector<Stream> streams;
  for (int s = 0; s < 3; ++s) streams.emplace_back(device, stream_options{.name = "s" + std::to_string(s)});
  for (int op = 0; op < 4; ++op) {
    for (int s = 0; s < 3; ++s) {
      streams[s].launch(kernel{.name = "tag", .sim = [&order, tag = s * 10 + op] { order.push_back(tag); }});
    }
  }
  device.synchronize();
  return order;
}

TEST(SimScheduler, SameSeedGivesTheSameInterleaving) {
  for (std::uint64_t seed : {1, 2, 99}) {
    EXPECT_EQ(run_order(seed), run_order(seed)) << "seed " << seed;
    EXPECT_EQ(run_order(seed, 3), run_order(seed, 3)) << "seed " << seed;
  }
}

TEST(SimScheduler, DifferentSeedsGiveDifferentInterleavings) {
  std::set<std::vector<int>> seen;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) seen.insert(run_order(seed));
  EXPECT_GT(seen.size(), 10u);
}

TEST(SimScheduler, EachStreamRunsInProgramOrder) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    auto order = run_order(seed);
    ASSERT_EQ(order.size(), 12u);
    std::vector<int> last(3, -1);
    for (int tag : order) {
      EXPECT_GT(tag % 10, last[tag / 10]) << "seed " << seed;
      last[tag / 10] = tag % 10;
    }
  }
}

TEST(SimScheduler, StarvedStreamRunsOnlyWhenNoOtherCan) {
  Device device = Device::sim({.seed = 5});
  std::vector<std::string> order;
  Stream starved(device, slow_stream("starved"));
  Stream busy(device, {.name = "busy"});
  starved.launch(kernel{.name = "a", .sim = [&] { order.push_back("starved"); }});
  for (int i = 0; i < 3; ++i) busy.launch(kernel{.name = "b", .sim = [&] { order.push_back("busy"); }});
  device.synchronize();
  EXPECT_EQ(order, (std::vector<std::string>{"busy", "busy", "busy", "starved"}));
}

TEST(SimScheduler, LazyWorkRunsOnlyWhenTheHostWaitsOrPolls) {
  Device device = Device::sim({.seed = 3});
  Stream stream(device);
  int runs = 0;
  stream.launch(kernel{.name = "count", .sim = [&] { ++runs; }});
  stream.launch(kernel{.name = "count", .sim = [&] { ++runs; }});
  EXPECT_EQ(runs, 0);
  EXPECT_FALSE(stream.query());  // reports pending work, then lets one op run
  EXPECT_EQ(runs, 1);
  stream.synchronize();
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(stream.query());
}

/// The missing-wait bug of GUIDE.md section 1, on sim: returns whether the consumer saw a
/// wrong value.
bool producer_consumer_corrupts(std::uint64_t seed, bool with_wait) {
  Device device = Device::sim({.seed = seed});
  Stream producer(device, slow_stream("producer"));
  Stream consumer(device, {.name = "consumer"});
  Event written(device);
  constexpr std::size_t count = 256;
  auto* in = static_cast<std::uint32_t*>(device.allocate(count * 4));
  auto* out = static_cast<std::uint32_t*>(device.allocate(count * 4));
  std::fill(in, in + count, 0xdeadu);  // what fresh memory held before
  producer.launch(slow_fill_kernel(in, count, 3));
  written.record(producer);
  if (with_wait) consumer.wait(written);
  consumer.launch(double_kernel(in, out, count));
  auto values = read_back(consumer, out, count);
  device.synchronize();
  device.deallocate(in);
  device.deallocate(out);
  return std::any_of(values.begin(), values.end(), [](std::uint32_t v) { return v != 6; });
}

TEST(SimScheduler, MissingWaitCorruptsUnderEverySeedAndTheFixNever) {
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    EXPECT_TRUE(producer_consumer_corrupts(seed, false)) << "seed " << seed;
    EXPECT_FALSE(producer_consumer_corrupts(seed, true)) << "seed " << seed;
  }
}

TEST(SimScheduler, KernelFailureIsReportedAtTheNextWaitAndTheDeviceStaysUsable) {
  Device device = Device::sim();
  Stream stream(device, {.name = "fragile"});
  stream.launch(kernel{.name = "boom", .sim = [] { throw std::runtime_error("bad index"); }});
  EXPECT_THAT([&] { stream.synchronize(); },
              ::testing::ThrowsMessage<error>(::testing::HasSubstr("kernel 'boom' on stream 'fragile'")));
  int ran = 0;
  stream.launch(kernel{.name = "fine", .sim = [&] { ++ran; }});
  stream.synchronize();
  EXPECT_EQ(ran, 1);
}

TEST(SimScheduler, ArenaOutOfMemoryNamesTheFigures) {
  Device device = Device::sim({.memory_capacity = 1 << 20});
  void* most = device.allocate(900 * 1024);
  EXPECT_THAT([&] { (void)device.allocate(512 * 1024); },
              ::testing::ThrowsMessage<out_of_memory>(::testing::AllOf(
                  ::testing::HasSubstr("524288 bytes"), ::testing::HasSubstr("capacity 1048576"))));
  device.deallocate(most);
  void* now_fits = device.allocate(512 * 1024);
  EXPECT_NE(now_fits, nullptr);
  device.deallocate(now_fits);
  EXPECT_EQ(device.memory().free_bytes, device.memory().total_bytes);
}

TEST(SimScheduler, DestroyedStreamStillRunsItsWork) {
  Device device = Device::sim();
  int ran = 0;
  Event after(device);
  {
    Stream short_lived(device);
    short_lived.launch(kernel{.name = "late", .sim = [&] { ++ran; }});
    after.record(short_lived);
  }
  after.synchronize();
  EXPECT_EQ(ran, 1);
}

}  // namespace
}  // namespace streamsafe::testing
