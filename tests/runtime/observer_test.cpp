// What the runtime tells its observers: destruction of events (owned and pooled), successful
// queries, and the observed order (a callback runs before another thread's observed call).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/event_pool.hpp"
#include "streamsafe/runtime_observer.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

/// Writes one line per callback it cares about.
class log_observer final : public RuntimeObserver {
 public:
  void on_event_destroyed(event_id event) override { add("destroyed " + number(event)); }
  void on_event_query_complete(EventRef event) override { add("event done " + number(event.id())); }
  void on_stream_query_complete(StreamRef stream) override { add("stream done " + stream.name()); }

  std::vector<std::string> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  static std::string number(event_id id) { return std::to_string(static_cast<std::uint64_t>(id)); }
  void add(std::string line) {
    std::lock_guard lock(mutex_);
    lines_.push_back(std::move(line));
  }
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

std::string number(const EventRef& event) { return std::to_string(static_cast<std::uint64_t>(event.id())); }

class RuntimeObservers : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped()) return;
    attach_observer(device(), log);
  }
  void TearDown() override {
    if (!IsSkipped()) detach_observer(device(), log.get());
  }
  std::shared_ptr<log_observer> log = std::make_shared<log_observer>();
};

TEST_P(RuntimeObservers, AnEventsEndIsReportedOnceWithItsId) {
  std::string id;
  {
    Event event(device());
    id = number(event);
    Event moved(std::move(event));  // the moved-from handle owns nothing: no report for it
  }
  EXPECT_THAT(log->lines(), ElementsAre("destroyed " + id));
}

TEST_P(RuntimeObservers, MoveAssigningOverAnEventEndsTheOldOne) {
  Event kept(device());
  Event replaced(device());
  const std::string old_id = number(replaced);
  replaced = std::move(kept);
  EXPECT_THAT(log->lines(), ElementsAre("destroyed " + old_id));
}

TEST_P(RuntimeObservers, APooledEventReturnedToItsPoolIsReportedEnded) {
  EventPool pool(device());
  std::string id;
  {
    auto event = pool.acquire();
    id = number(event);
  }
  EXPECT_THAT(log->lines(), ElementsAre("destroyed " + id));
  auto again = pool.acquire();  // the same event, handed out afresh
  EXPECT_EQ(number(again), id);
}

TEST_P(RuntimeObservers, OnlyASuccessfulQueryIsReported) {
  Stream stream(device(), slow_stream("polled"));
  auto* data = static_cast<std::uint32_t*>(device().allocate(64 * sizeof(std::uint32_t)));
  stream.launch(slow_fill_kernel(data, 64, 1));
  Event event(device());
  event.record(stream);
  const std::string id = number(event);
  bool done = event.query();
  while (!done) done = event.query();
  while (!stream.query()) {
  }
  auto lines = log->lines();
  EXPECT_THAT(lines, ElementsAre("event done " + id, "stream done polled"));
  device().deallocate(data);
}

TEST_P(RuntimeObservers, NoQueryIsReportedWithoutAnObserver) {
  detach_observer(device(), log.get());
  Stream stream(device());
  EXPECT_TRUE(stream.query());
  EXPECT_THAT(log->lines(), IsEmpty());
}

/// Holds its callback until told, to show that another thread's observed call waits for it.
class holding_observer final : public RuntimeObserver {
 public:
  void on_event_record(EventRef /*event*/, StreamRef /*stream*/) override {
    entered.store(true);
    while (!released.load()) std::this_thread::yield();
  }
  void on_stream_wait(StreamRef /*waiter*/, EventRef /*event*/) override { waited_after_release = released.load(); }
  std::atomic<bool> entered{false};
  std::atomic<bool> released{false};
  std::atomic<bool> waited_after_release{false};
};

TEST_P(RuntimeObservers, AnotherThreadsObservedCallWaitsForTheCallbackInProgress) {
  auto holder = std::make_shared<holding_observer>();
  attach_observer(device(), holder);
  Stream producer(device());
  Stream consumer(device());
  Event event(device());
  std::thread recorder([&] { event.record(producer); });
  while (!holder->entered.load()) std::this_thread::yield();
  std::thread waiter([&] { consumer.wait(event); });
  // The waiter is blocked behind the record's callback; release it only after giving it time to
  // run ahead if it could (a wrong runtime fails this test; a slow machine cannot fail it).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  holder->released.store(true);
  recorder.join();
  waiter.join();
  EXPECT_TRUE(holder->waited_after_release.load());
  detach_observer(device(), holder.get());
}

INSTANTIATE_TEST_SUITE_P(Backends, RuntimeObservers,
                         ::testing::Values(test_backend::sim_deterministic, test_backend::sim_threaded,
                                           test_backend::cuda),
                         backend_test_name);

}  // namespace
}  // namespace streamsafe::testing
