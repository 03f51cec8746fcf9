// CUDA's stream and event semantics, checked on every backend (cuda skips without a GPU).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "backends.hpp"
#include "streamsafe/current_stream.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/event_pool.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::testing {
namespace {

using ::testing::Each;
using ::testing::Eq;
using ::testing::HasSubstr;

constexpr std::size_t count = 4096;

class StreamSemantics : public BackendTest {
 protected:
  std::uint32_t* device_array() {
    auto* data = static_cast<std::uint32_t*>(device().allocate(count * sizeof(std::uint32_t)));
    owned_.push_back(data);
    return data;
  }
  void TearDown() override {
    if (owned_.empty()) return;
    device().synchronize();
    for (auto* data : owned_) device().deallocate(data);
  }

 private:
  std::vector<std::uint32_t*> owned_;
};

TEST_P(StreamSemantics, ConsumerThatWaitsOnProducerEventSeesTheWrite) {
  Stream producer(device(), slow_stream("producer"));
  Stream consumer(device(), {.name = "consumer"});
  Event written(device());
  auto* in = device_array();
  auto* out = device_array();
  for (std::uint32_t trial = 1; trial <= 5; ++trial) {
    producer.launch(slow_fill_kernel(in, count, trial));
    written.record(producer);
    consumer.wait(written);
    consumer.launch(double_kernel(in, out, count));
    EXPECT_THAT(read_back(consumer, out, count), Each(Eq(2 * trial))) << "trial " << trial;
  }
}

TEST_P(StreamSemantics, WaitOnStreamOrdersAfterAllItsWorkSoFar) {
  Stream producer(device(), slow_stream("producer"));
  Stream consumer(device(), {.name = "consumer"});
  auto* in = device_array();
  auto* out = device_array();
  producer.launch(slow_fill_kernel(in, count, 21));
  consumer.wait(producer);
  consumer.launch(double_kernel(in, out, count));
  EXPECT_THAT(read_back(consumer, out, count), Each(Eq(42u)));
}

TEST_P(StreamSemantics, WaitingOnANeverRecordedEventDoesNothing) {
  Stream stream(device(), {.name = "lonely"});
  Event never_recorded(device());
  EXPECT_TRUE(never_recorded.query());
  never_recorded.synchronize();  // returns at once
  stream.wait(never_recorded);
  auto* data = device_array();
  stream.launch(fill_kernel(data, count, 7));
  EXPECT_THAT(read_back(stream, data, count), Each(Eq(7u)));
}

TEST_P(StreamSemantics, RecordCapturesOnlyWorkEnqueuedBeforeIt) {
  Stream producer(device(), slow_stream("producer"));
  Stream consumer(device(), {.name = "consumer"});
  Event first_done(device());
  auto* first = device_array();
  auto* second = device_array();
  auto* seen_first = device_array();
  auto* seen_second = device_array();
  producer.launch(fill_kernel(second, count, 0));
  producer.launch(slow_fill_kernel(first, count, 1));
  first_done.record(producer);
  producer.launch(slow_fill_kernel(second, count, 2));
  consumer.wait(first_done);
  consumer.copy(seen_first, first, count * sizeof(std::uint32_t));
  // Reading `second` races with the producer on purpose; only the deterministic scheduler
  // makes that race's outcome (and its absence of a data race on the host) well defined.
  if (deterministic()) consumer.copy(seen_second, second, count * sizeof(std::uint32_t));
  EXPECT_THAT(read_back(consumer, seen_first, count), Each(Eq(1u)));
  if (deterministic()) {
    // The starved producer runs its second write only when the consumer cannot run: the wait
    // covered the first write alone, so the consumer copied the old contents of `second`.
    EXPECT_THAT(read_back(consumer, seen_second, count), Each(Eq(0u)));
  }
  producer.synchronize();
}

TEST_P(StreamSemantics, RecordingAgainAfterAWaitDoesNotChangeThatWait) {
  Stream producer(device(), slow_stream("producer"));
  Stream consumer(device(), {.name = "consumer"});
  Event marker(device());
  auto* first = device_array();
  auto* second = device_array();
  auto* seen_second = device_array();
  producer.launch(fill_kernel(second, count, 0));
  producer.launch(slow_fill_kernel(first, count, 1));
  marker.record(producer);
  consumer.wait(marker);
  producer.launch(slow_fill_kernel(second, count, 2));
  marker.record(producer);  // too late for the wait above
  if (deterministic()) {
    consumer.copy(seen_second, second, count * sizeof(std::uint32_t));
    EXPECT_THAT(read_back(consumer, seen_second, count), Each(Eq(0u)));
  }
  marker.synchronize();
  EXPECT_THAT(read_back(producer, second, count), Each(Eq(2u)));
}

TEST_P(StreamSemantics, HostSynchronizationMakesResultsVisible) {
  Stream stream(device(), {.name = "worker"});
  auto* data = device_array();
  auto* host = static_cast<std::uint32_t*>(device().allocate_pinned(count * sizeof(std::uint32_t)));
  Event done(device());

  stream.launch(slow_fill_kernel(data, count, 5));
  stream.copy(host, data, count * sizeof(std::uint32_t));
  done.record(stream);
  done.synchronize();
  EXPECT_TRUE(done.query());
  EXPECT_EQ(host[0], 5u);
  EXPECT_EQ(host[count - 1], 5u);

  stream.launch(slow_fill_kernel(data, count, 6));
  stream.copy(host, data, count * sizeof(std::uint32_t));
  stream.synchronize();
  EXPECT_TRUE(stream.query());
  EXPECT_EQ(host[count / 2], 6u);

  stream.fill(data, 0xff, count * sizeof(std::uint32_t));
  stream.copy(host, data, count * sizeof(std::uint32_t));
  device().synchronize();
  EXPECT_EQ(host[3], 0xffffffffu);
  device().deallocate_pinned(host);
}

TEST_P(StreamSemantics, TimingEventsMeasureElapsedTime) {
  Stream stream(device(), {.name = "timed"});
  Event start(device(), event_timing::enabled);
  Event stop(device(), event_timing::enabled);
  auto* data = device_array();
  start.record(stream);
  stream.launch(slow_fill_kernel(data, count, 1));
  stop.record(stream);
  stop.synchronize();
  EXPECT_GE(elapsed_ms(start, stop), 0.0f);

  Event untimed(device());
  untimed.record(stream);
  untimed.synchronize();
  EXPECT_THROW((void)elapsed_ms(start, untimed), usage_error);
}

TEST_P(StreamSemantics, EventPoolReusesEvents) {
  EventPool pool(device());
  Stream stream(device(), {.name = "pooled"});
  for (int i = 0; i < 10; ++i) {
    auto event = pool.acquire();
    event.record(stream);
    stream.wait(event);
  }
  EXPECT_EQ(pool.created_count(), 1u);
  EXPECT_EQ(pool.idle_count(), 1u);
  {
    auto a = pool.acquire();
    auto b = pool.acquire();
    EXPECT_EQ(pool.created_count(), 2u);
    EXPECT_NE(a.id(), b.id());
  }
  EXPECT_EQ(pool.idle_count(), 2u);
  stream.synchronize();
}

TEST_P(StreamSemantics, StreamGuardSetsTheCurrentStreamPerDevice) {
  Stream outer(device(), {.name = "outer"});
  Stream inner(device(), {.name = "inner"});
  Device other = Device::sim();
  EXPECT_EQ(current_stream(device()), device().default_stream());
  {
    StreamGuard use_outer(outer);
    EXPECT_EQ(current_stream(device()), outer);
    {
      StreamGuard use_inner(inner);
      EXPECT_EQ(current_stream(device()), inner);
      EXPECT_EQ(current_stream(other), other.default_stream());
    }
    EXPECT_EQ(current_stream(device()), outer);
  }
  EXPECT_EQ(current_stream(device()), device().default_stream());
}

TEST_P(StreamSemantics, StreamsHaveUniqueIdsAndNames) {
  Stream a(device(), {.name = "copy"});
  Stream b(device());
  EXPECT_NE(a.id(), b.id());
  EXPECT_EQ(a.name(), "copy");
  EXPECT_EQ(b.name(), "stream" + std::to_string(static_cast<std::uint64_t>(b.id())));
  EXPECT_EQ(a.device(), device());
  EXPECT_EQ((device().backend() == backend_kind::cuda), (a.native() != nullptr));
}

TEST_P(StreamSemantics, WaitingAcrossDevicesIsAClearError) {
  Device elsewhere = Device::sim();
  Stream here(device(), {.name = "here"});
  Event there(elsewhere);
  try {
    here.wait(there);
    FAIL() << "expected usage_error";
  } catch (const usage_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("stream 'here'"));
    EXPECT_THAT(e.what(), HasSubstr("event"));
  }
  Stream far(elsewhere, {.name = "far"});
  EXPECT_THROW(here.wait(far), usage_error);
  EXPECT_THROW(Event(device()).record(far), usage_error);
}

TEST_P(StreamSemantics, MovedFromHandlesAreAClearError) {
  Stream original(device(), {.name = "original"});
  Stream moved = std::move(original);
  EXPECT_THAT([&] { original.synchronize(); }, ::testing::ThrowsMessage<usage_error>(HasSubstr("moved-from Stream")));
  moved.synchronize();
  Event event(device());
  Event taken = std::move(event);
  EXPECT_THAT([&] { event.record(moved); }, ::testing::ThrowsMessage<usage_error>(HasSubstr("moved-from Event")));
  taken.record(moved);
  taken.synchronize();
}

TEST_P(StreamSemantics, KernelWithoutThisBackendsCallableIsRejected) {
  Stream stream(device(), {.name = "picky"});
  kernel cuda_only{.name = "cuda_only", .cuda = [](native_stream) {}};
  kernel sim_only{.name = "sim_only", .sim = [] {}};
  const auto& wrong = device().backend() == backend_kind::sim ? cuda_only : sim_only;
  EXPECT_THAT([&] { stream.launch(wrong); }, ::testing::ThrowsMessage<usage_error>(HasSubstr(wrong.name)));
}

TEST_P(StreamSemantics, BadPointersAreRejectedAndTheDeviceStaysUsable) {
  int on_the_stack = 0;
  EXPECT_THROW(device().deallocate(&on_the_stack), std::exception);
  void* block = device().allocate(1024);
  device().deallocate(block);
  if (device().backend() == backend_kind::sim) EXPECT_THROW(device().deallocate(block), usage_error);
  void* again = device().allocate(1024);
  EXPECT_NE(again, nullptr);
  device().deallocate(again);
  EXPECT_EQ(device().allocate(0), nullptr);
  device().deallocate(nullptr);
}

TEST_P(StreamSemantics, AbsurdAllocationThrowsOutOfMemoryAndLaterOnesWork) {
  EXPECT_THROW((void)device().allocate(std::size_t{1} << 62), out_of_memory);
  void* fine = device().allocate(4096);
  EXPECT_NE(fine, nullptr);
  device().deallocate(fine);
}

STREAMSAFE_ALL_BACKENDS(StreamSemantics);

}  // namespace
}  // namespace streamsafe::testing
