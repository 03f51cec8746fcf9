// The tracker driven from several host threads on the threaded sim scheduler: the model must see
// records, waits and tracked ops in the order the runtime performed them. The first two tests
// force the interleavings where they used to disagree: a gate observer, attached before the
// tracker, stops one thread between its runtime call and the tracker's update while the other
// thread makes its call.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "tracker_support.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/hazard/tracker.hpp"
#include "streamsafe/runtime_observer.hpp"

namespace streamsafe::testing {
namespace {

using hazard::hazard_kind;
using hazard::policy;
using ::testing::Contains;
using ::testing::Each;
using ::testing::Eq;
using ::testing::IsEmpty;

/// A one-shot flag another thread can wait for.
class signal {
 public:
  void raise() {
    {
      std::lock_guard lock(mutex_);
      raised_ = true;
    }
    changed_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return raised_; });
  }
  /// Waits for the flag, giving up after `grace`: used where the other thread may be (correctly)
  /// blocked behind the waiter, so the outcome never depends on the grace, only whether the
  /// interleaving was forced.
  void wait_at_most(std::chrono::milliseconds grace) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, grace, [&] { return raised_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool raised_ = false;
};

/// Stops the first thread that reaches the gated callback after its runtime call: it raises
/// `reached`, then waits for `release` (for at most the grace).
class gate_observer final : public RuntimeObserver {
 public:
  enum class at { event_record, stream_wait };
  explicit gate_observer(at where) : where_(where) {}

  signal reached;
  signal release;

  void on_event_record(EventRef /*event*/, StreamRef /*stream*/) override {
    if (where_ == at::event_record) hold();
  }
  void on_stream_wait(StreamRef /*waiter*/, EventRef /*event*/) override {
    if (where_ == at::stream_wait) hold();
  }

 private:
  void hold() {
    if (held_.exchange(true)) return;
    reached.raise();
    release.wait_at_most(std::chrono::milliseconds(200));
  }
  at where_;
  std::atomic<bool> held_{false};
};

struct two_stream_program {
  explicit two_stream_program(gate_observer::at where)
      : device(make_device(test_backend::sim_threaded)),
        gate(std::make_shared<gate_observer>(where)),
        attached((attach_observer(device, gate), true)),
        tracker(device, policy::report),
        producer(device, slow_stream("producer")),
        consumer(device, {.name = "consumer"}),
        written(device),
        in(static_cast<std::uint32_t*>(device.allocate(bytes))),
        out(static_cast<std::uint32_t*>(device.allocate(bytes))) {
    std::fill(in, in + count, 0u);
    tracker.on(producer).writes(in, bytes).launch(slow_fill_kernel(in, count, 5));
  }
  ~two_stream_program() {
    device.synchronize();
    device.deallocate(in);
    device.deallocate(out);
    detach_observer(device, gate.get());
  }

  /// Makes `gated` on this thread; the gate stops it after its runtime call, and meanwhile
  /// another thread makes `meanwhile`, then releases the gate.
  void interleave(const std::function<void()>& gated, const std::function<void()>& meanwhile) {
    std::thread other([&] {
      gate->reached.wait();
      meanwhile();
      gate->release.raise();
    });
    gated();
    other.join();
  }

  void consume() { tracker.on(consumer).reads(in, bytes).writes(out, bytes).launch(double_kernel(in, out, count)); }

  Device device;
  std::shared_ptr<gate_observer> gate;
  bool attached;  // the gate is attached before the tracker, so it runs first
  hazard::tracker tracker;
  Stream producer;
  Stream consumer;
  Event written;
  std::uint32_t* in;
  std::uint32_t* out;
};

// The runtime performs the wait first (a no-op: nothing recorded yet) and the record second.
// The model must do the same: the consumer is then unordered with the producer's write.
TEST(HazardTrackerThreaded, AWaitThatRanBeforeTheRecordIsANoOpInTheModelToo) {
  two_stream_program program(gate_observer::at::stream_wait);
  program.interleave([&] { program.consumer.wait(program.written); },
                     [&] { program.written.record(program.producer); });
  program.consume();
  const auto found = kinds(program.tracker);
  EXPECT_THAT(found, Contains(hazard_kind::wait_unrecorded));
  EXPECT_THAT(found, Contains(hazard_kind::race));
}

// The runtime records first and the wait is real. The model must not see the wait first (a
// false wait_unrecorded, then a false race at the consumer's read).
TEST(HazardTrackerThreaded, AWaitThatRanAfterTheRecordIsARealWaitInTheModelToo) {
  two_stream_program program(gate_observer::at::event_record);
  program.interleave([&] { program.written.record(program.producer); },
                     [&] { program.consumer.wait(program.written); });
  program.consume();
  EXPECT_THAT(read_back(program.consumer, program.out, count), Each(Eq(10u)));
  EXPECT_THAT(kinds(program.tracker), IsEmpty());
}

/// One host thread's pipeline: a producer writes, an event hands off, a consumer reads.
void correct_pipeline(Device& device, hazard::tracker& tracker, unsigned iterations, std::uint32_t seed) {
  Stream producer(device, slow_stream("producer"));
  Stream consumer(device, {.name = "consumer"});
  Event written(device);
  auto* in = static_cast<std::uint32_t*>(device.allocate(bytes));
  auto* out = static_cast<std::uint32_t*>(device.allocate(bytes));
  for (unsigned i = 0; i < iterations; ++i) {
    const std::uint32_t value = seed + i;
    tracker.on(producer).writes(in, bytes).launch(fill_kernel(in, count, value));
    written.record(producer);
    consumer.wait(written);
    tracker.on(consumer).reads(in, bytes).writes(out, bytes).launch(double_kernel(in, out, count));
    // The producer's next write must wait for this read: the consumer hands back.
    Event read(device);
    read.record(consumer);
    producer.wait(read);
    EXPECT_THAT(read_back(consumer, out, count), Each(Eq(2 * value))) << "iteration " << i;
  }
  producer.synchronize();
  device.deallocate(in);
  device.deallocate(out);
}

TEST(HazardTrackerThreaded, CorrectPipelinesOnSeveralHostThreadsAreClean) {
  Device device = make_device(test_backend::sim_threaded);
  hazard::tracker tracker(device, policy::report);
  std::vector<std::thread> threads;
  for (std::uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { correct_pipeline(device, tracker, 20, 100 * (t + 1)); });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_THAT(kinds(tracker), IsEmpty());
}

}  // namespace
}  // namespace streamsafe::testing
