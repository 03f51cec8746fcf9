// The torch allocator's C ABI on a sim device: the calls torch makes, with fake handles for
// torch's streams (sim_torch_backend.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "instance.hpp"
#include "sim_torch_backend.hpp"
#include "stream_registry.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe_torch_alloc.h"

namespace streamsafe::torch_alloc::testing {
namespace {

using streamsafe::testing::read_back;
using streamsafe::testing::slow_copy_kernel;

constexpr std::size_t count = 1024;
constexpr std::size_t bytes = count * sizeof(std::uint32_t);

class TorchAllocTest : public ::testing::Test {
 protected:
  void SetUp() override { replace_instance(sim_torch_backend(state_)); }
  void TearDown() override { replace_instance(sim_torch_backend(std::make_shared<sim_torch_state>())); }

  /// The stream adopted for `handle` (adopting it now if the allocator has not yet).
  StreamRef stream(native_stream handle) {
    streamsafe_torch_free(streamsafe_torch_malloc(512, 0, handle), 512, 0, handle);
    std::lock_guard lock(state_->mutex);
    return state_->adopted.at(handle);
  }
  std::map<std::string, std::int64_t> stats() {
    std::vector<streamsafe_torch_stat> out(streamsafe_torch_stats(0, nullptr, 0));
    const std::size_t n = streamsafe_torch_stats(0, out.data(), out.size());
    std::map<std::string, std::int64_t> by_key;
    for (std::size_t i = 0; i < n; ++i) by_key[out[i].key] = out[i].value;
    return by_key;
  }
  void set_capturing(native_stream handle, bool on) {
    std::lock_guard lock(state_->mutex);
    if (on) state_->capturing.insert(handle);
    else state_->capturing.erase(handle);
    state_->any_capturing.store(!state_->capturing.empty(), std::memory_order_release);
  }

  std::shared_ptr<sim_torch_state> state_ = std::make_shared<sim_torch_state>();
  native_stream producer_ = fake_handle(0x1000);
  native_stream consumer_ = fake_handle(0x2000);
};

TEST_F(TorchAllocTest, AFreedBlockIsReusedOnItsStreamAndCountedUnderTorchsKeys) {
  void* first = streamsafe_torch_malloc(1000, 0, producer_);
  ASSERT_NE(first, nullptr);
  auto live = stats();
  EXPECT_EQ(live.at("allocated_bytes.all.current"), 1024);  // rounded to 512
  EXPECT_EQ(live.at("requested_bytes.all.current"), 1000);
  EXPECT_EQ(live.at("allocation.all.current"), 1);
  EXPECT_GE(live.at("reserved_bytes.all.current"), 1024);
  streamsafe_torch_free(first, 1000, 0, producer_);
  EXPECT_EQ(streamsafe_torch_malloc(1000, 0, producer_), first);
  streamsafe_torch_free(first, 1000, 0, producer_);

  const auto after = stats();
  EXPECT_EQ(after.size(), 33U);
  EXPECT_EQ(after.at("allocated_bytes.all.current"), 0);
  EXPECT_EQ(after.at("allocated_bytes.all.peak"), 1024);
  EXPECT_EQ(after.at("allocation.all.allocated"), 2);
  EXPECT_EQ(after.at("allocation.all.freed"), 2);
  for (const char* key : {"active_bytes.all.current", "segment.all.current", "num_alloc_retries", "num_ooms",
                          "num_sync_all_streams", "num_device_alloc", "num_device_free"}) {
    EXPECT_TRUE(after.contains(key)) << key;
  }
}

TEST_F(TorchAllocTest, ResetPeakStatsBringsPeaksToTheCurrentValues) {
  void* big = streamsafe_torch_malloc(1 << 20, 0, producer_);
  streamsafe_torch_free(big, 1 << 20, 0, producer_);
  ASSERT_EQ(stats().at("allocated_bytes.all.peak"), 1 << 20);
  ASSERT_EQ(streamsafe_torch_reset_peak_stats(0), 0);
  EXPECT_EQ(stats().at("allocated_bytes.all.peak"), 0);
}

// torch's x.record_stream(s): the block freed on its allocation stream is not handed out again
// while s still reads it.
TEST_F(TorchAllocTest, RecordStreamHoldsTheBlockUntilTheOtherStreamsReadIsDone) {
  state_->plans[consumer_] = streamsafe::testing::slow_stream("consumer");
  StreamRef producer = stream(producer_);
  StreamRef consumer = stream(consumer_);
  auto* input = static_cast<std::uint32_t*>(streamsafe_torch_malloc(bytes, 0, producer_));
  auto* output = static_cast<std::uint32_t*>(streamsafe_torch_malloc(bytes, 0, consumer_));
  producer.launch(streamsafe::testing::fill_kernel(input, count, 7));
  consumer.wait(producer);
  consumer.launch(slow_copy_kernel(input, output, count));  // starved: still queued below
  streamsafe_torch_record_stream(input, consumer_);
  streamsafe_torch_free(input, bytes, 0, producer_);

  auto* next = static_cast<std::uint32_t*>(streamsafe_torch_malloc(bytes, 0, producer_));
  producer.launch(streamsafe::testing::fill_kernel(next, count, 99));
  const auto seen = read_back(consumer, output, count);
  EXPECT_EQ(seen, std::vector<std::uint32_t>(count, 7));
  producer.synchronize();
  streamsafe_torch_free(next, bytes, 0, producer_);
  streamsafe_torch_free(output, bytes, 0, consumer_);
}

TEST_F(TorchAllocTest, ARecordStreamOfAPointerNotLiveHereThrowsNamingIt) {
  int local = 0;
  try {
    streamsafe_torch_record_stream(&local, consumer_);
    FAIL() << "record_stream of a foreign pointer did not throw";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("record_stream of pointer"), std::string::npos) << e.what();
  }
}

TEST_F(TorchAllocTest, AFreeDuringCaptureWaitsUntilTheCaptureEnds) {
  void* block = streamsafe_torch_malloc(bytes, 0, producer_);
  set_capturing(producer_, true);
  streamsafe_torch_free(block, bytes, 0, producer_);
  EXPECT_EQ(streamsafe_torch_deferred_frees(), 1U);
  EXPECT_EQ(stats().at("allocated_bytes.all.current"), static_cast<std::int64_t>(bytes));

  set_capturing(producer_, false);
  void* other = streamsafe_torch_malloc(512, 0, consumer_);  // any call into the library drains
  EXPECT_EQ(streamsafe_torch_deferred_frees(), 0U);
  EXPECT_EQ(stats().at("allocated_bytes.all.current"), 512);
  streamsafe_torch_free(other, 512, 0, consumer_);
}

TEST_F(TorchAllocTest, AFreeWhoseRecordedStreamCapturesIsDeferredToo) {
  (void)stream(consumer_);
  void* block = streamsafe_torch_malloc(bytes, 0, producer_);
  streamsafe_torch_record_stream(block, consumer_);
  set_capturing(consumer_, true);
  streamsafe_torch_free(block, bytes, 0, producer_);
  EXPECT_EQ(streamsafe_torch_deferred_frees(), 1U);
  set_capturing(consumer_, false);
  streamsafe_torch_empty_cache();
  EXPECT_EQ(streamsafe_torch_deferred_frees(), 0U);
  EXPECT_EQ(stats().at("allocated_bytes.all.current"), 0);
}

TEST_F(TorchAllocTest, AnAllocationDuringCaptureFailsNamingTheCapture) {
  set_capturing(producer_, true);
  try {
    (void)streamsafe_torch_malloc(bytes, 0, producer_);
    FAIL() << "allocation during capture did not throw";
  } catch (const usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("during CUDA graph capture"), std::string::npos) << e.what();
  }
  EXPECT_EQ(stats().at("allocation.all.current"), 0);
}

TEST_F(TorchAllocTest, OptionsApplyBeforeTheFirstAllocationOnly) {
  ASSERT_EQ(streamsafe_torch_configure("segments:fixed,small_segment:4MiB"), 0) << streamsafe_torch_last_error();
  void* block = streamsafe_torch_malloc(512, 0, producer_);
  EXPECT_EQ(stats().at("reserved_bytes.all.current"), 4 << 20);  // one fixed small segment
  EXPECT_EQ(streamsafe_torch_configure("segments:expandable"), -1);
  EXPECT_NE(std::string(streamsafe_torch_last_error()).find("after the first allocation"), std::string::npos);
  streamsafe_torch_free(block, 512, 0, producer_);
}

TEST_F(TorchAllocTest, ABadOptionIsRefusedNamingTheKey) {
  EXPECT_EQ(streamsafe_torch_configure("no_such_key:1"), -1);
  EXPECT_NE(std::string(streamsafe_torch_last_error()).find("no_such_key"), std::string::npos)
      << streamsafe_torch_last_error();
}

TEST_F(TorchAllocTest, AFreeOfAForeignPointerDoesNotThrow) {
  int local = 0;
  EXPECT_NO_THROW(streamsafe_torch_free(&local, 4, 0, producer_));
}

TEST(StreamRegistry, TheLegacyHandlesAreTheDefaultStreamAndPerThreadIsOneStreamPerThread) {
  auto state = std::make_shared<sim_torch_state>();
  auto backend = sim_torch_backend(state);
  stream_registry registry(state->device, backend.adopt);
  EXPECT_EQ(registry.resolve(nullptr), state->device.default_stream());
  EXPECT_EQ(registry.resolve(fake_handle(legacy_stream_handle)), state->device.default_stream());

  const native_stream per_thread = fake_handle(per_thread_stream_handle);
  const stream_id here = registry.resolve(per_thread).id();
  EXPECT_EQ(registry.resolve(per_thread).id(), here);
  stream_id there{};
  std::thread([&] { there = registry.resolve(per_thread).id(); }).join();
  EXPECT_NE(there, here);
  EXPECT_NE(there, stream_id{});
}

TEST(StreamRegistry, AHandleIsAdoptedOnce) {
  auto state = std::make_shared<sim_torch_state>();
  auto backend = sim_torch_backend(state);
  stream_registry registry(state->device, backend.adopt);
  const auto first = registry.resolve(fake_handle(0x40)).id();
  EXPECT_EQ(registry.resolve(fake_handle(0x40)).id(), first);
  EXPECT_NE(registry.resolve(fake_handle(0x80)).id(), first);
}

}  // namespace
}  // namespace streamsafe::torch_alloc::testing
