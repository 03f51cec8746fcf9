// One hazard tracker over several sim ranks' devices in one process: a rank reading another
// rank's buffer is checked against that rank's writes, a device synchronization orders that
// device's streams only, and an all-reduce orders every rank's stream after the work every rank
// issued before it (and nothing issued after). The producer's stream is starved, so a read that
// the runtime does not order after it really gets the old bytes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sim_ranks.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/hazard/report_text.hpp"
#include "streamsafe/hazard/tracker.hpp"

namespace streamsafe::collectives::testing {
namespace {

using hazard::hazard_kind;
using hazard::policy;
using ::testing::Each;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::size_t kCount = 1024;
constexpr std::size_t kBytes = kCount * sizeof(float);

Device threaded_sim() {
  return Device::sim(sim_options{.memory_capacity = std::size_t{16} << 20,
                                 .mode = sim_mode::threaded,
                                 .starve_delay = std::chrono::microseconds(20000)});
}

kernel fill_with(float* data, float value, std::string name) {
  return kernel{.name = std::move(name), .cuda = {}, .sim = [=] { std::fill(data, data + kCount, value); }};
}

std::vector<hazard_kind> kinds(const hazard::tracker& tracker) {
  std::vector<hazard_kind> found;
  for (const auto& h : tracker.hazards()) found.push_back(h.kind);
  return found;
}

std::string reports(const hazard::tracker& tracker) {
  std::string text;
  for (const auto& h : tracker.hazards()) text += hazard::describe(h) + "\n";
  return text;
}

/// Two ranks, one tracker over both devices. Rank 0 writes `peer` on a starved stream; rank 1
/// copies it into `local` on its own stream.
struct two_ranks {
  std::array<Device, 2> devices{threaded_sim(), threaded_sim()};
  hazard::tracker hazards{std::span<const Device>(devices), policy::report};
  Stream producer{devices[0], stream_options{.name = "rank 0 producer", .pacing = sim_pacing::starved}};
  Stream consumer{devices[1], stream_options{.name = "rank 1 consumer"}};
  float* peer = static_cast<float*>(devices[0].allocate(kBytes));
  float* local = static_cast<float*>(devices[1].allocate(kBytes));
  float* rank1_grads = static_cast<float*>(devices[1].allocate(kBytes));

  two_ranks() {
    std::fill(peer, peer + kCount, -1.0F);
    std::fill(local, local + kCount, 0.0F);
    std::fill(rank1_grads, rank1_grads + kCount, 0.0F);
  }
  ~two_ranks() {
    devices[0].synchronize();
    devices[1].synchronize();
    devices[0].deallocate(peer);
    devices[1].deallocate(local);
    devices[1].deallocate(rank1_grads);
  }
  two_ranks(const two_ranks&) = delete;
  two_ranks& operator=(const two_ranks&) = delete;

  void produce(float value, const std::string& name) {
    hazards.on(producer).writes(peer, kBytes).launch(fill_with(peer, value, name));
  }
  std::vector<float> peer_read() {
    hazards.on(consumer).copy(local, peer, kBytes);
    return read_floats(consumer, local, kCount);
  }
};

/// The two ranks' communicators of one sim group, in step 0.
struct group_of_two {
  std::shared_ptr<sim_group> group = std::make_shared<sim_group>(2);
  sim_communicator rank0{group, 0};
  sim_communicator rank1{group, 1};
  group_of_two() {
    rank0.begin_step(0);
    rank1.begin_step(0);
  }
};

/// What the pipeline's sync stage does for a bucket: a tracked op for the reduction's read and
/// write of the rank's buffer, the collective told to the tracker, then the all-reduce itself.
void tracked_all_reduce(hazard::tracker& hazards, communicator& comm, StreamRef stream, float* buffer,
                        std::uint64_t sequence) {
  const kernel marker{.name = "all_reduce 'grads'", .cuda = {}, .sim = [] {}};
  hazards.on(stream).reads(buffer, kBytes).writes(buffer, kBytes).launch(marker);
  hazards.track_collective(stream, comm.group_id(), sequence, static_cast<std::size_t>(comm.size()));
  comm.all_reduce(buffer, kCount, data_type::float32, reduce_op::sum, stream, collective_label{.bucket = 0, .name = "grads"});
}

TEST(CollectiveHazards, APeerReadBeforeTheProducerFinishedIsReported) {
  two_ranks ranks;
  ranks.produce(4.0F, "produce");
  EXPECT_THAT(ranks.peer_read(), Not(Each(Eq(4.0F))));  // the bug is real: old bytes
  ASSERT_EQ(kinds(ranks.hazards), std::vector<hazard_kind>{hazard_kind::race}) << reports(ranks.hazards);
  const std::string text = hazard::describe(ranks.hazards.hazards()[0]);
  EXPECT_THAT(text, HasSubstr("`copy` on `rank 1 consumer`"));
  EXPECT_THAT(text, HasSubstr("`produce` on `rank 0 producer`"));
}

TEST(CollectiveHazards, APeerReadAfterTheHostSawTheProducerFinishIsClean) {
  two_ranks ranks;
  ranks.produce(4.0F, "produce");
  ranks.producer.synchronize();
  EXPECT_THAT(ranks.peer_read(), Each(Eq(4.0F)));
  EXPECT_TRUE(ranks.hazards.hazards().empty()) << reports(ranks.hazards);
}

TEST(CollectiveHazards, SynchronizingTheReadersDeviceDoesNotOrderAPeerRead) {
  two_ranks ranks;
  ranks.produce(4.0F, "produce");
  ranks.devices[1].synchronize();
  EXPECT_THAT(ranks.peer_read(), Not(Each(Eq(4.0F))));
  EXPECT_EQ(kinds(ranks.hazards), std::vector<hazard_kind>{hazard_kind::race}) << reports(ranks.hazards);
}

TEST(CollectiveHazards, SynchronizingTheProducersDeviceOrdersAPeerRead) {
  two_ranks ranks;
  ranks.produce(4.0F, "produce");
  ranks.devices[0].synchronize();
  EXPECT_THAT(ranks.peer_read(), Each(Eq(4.0F)));
  EXPECT_TRUE(ranks.hazards.hazards().empty()) << reports(ranks.hazards);
}

// Rank 1's all-reduce completes only once rank 0's has begun, after rank 0's producer: the
// reduced buffer rank 1 then reads from rank 0 holds the sum, and nothing is reported.
TEST(CollectiveHazards, AnAllReduceOrdersEveryRanksStreamAfterEveryRanksWorkBeforeIt) {
  two_ranks ranks;
  group_of_two comms;
  ranks.produce(4.0F, "produce");
  tracked_all_reduce(ranks.hazards, comms.rank0, ranks.producer, ranks.peer, 0);
  tracked_all_reduce(ranks.hazards, comms.rank1, ranks.consumer, ranks.rank1_grads, 0);
  EXPECT_THAT(ranks.peer_read(), Each(Eq(4.0F)));
  EXPECT_TRUE(ranks.hazards.hazards().empty()) << reports(ranks.hazards);
  EXPECT_EQ(ranks.hazards.events_tracked(), 0U);  // the collective's arrival clocks are gone
}

// Rank 0 writes its buffer again after its own all-reduce: the collective orders rank 1 after
// what rank 0 issued before it, not after this, so rank 1's read races with the new write.
TEST(CollectiveHazards, WorkARankIssuesAfterItsAllReduceIsNotOrderedByIt) {
  two_ranks ranks;
  group_of_two comms;
  ranks.produce(4.0F, "produce");
  tracked_all_reduce(ranks.hazards, comms.rank0, ranks.producer, ranks.peer, 0);
  ranks.produce(9.0F, "produce again");
  tracked_all_reduce(ranks.hazards, comms.rank1, ranks.consumer, ranks.rank1_grads, 0);
  EXPECT_THAT(ranks.peer_read(), Not(Each(Eq(9.0F))));
  ASSERT_EQ(kinds(ranks.hazards), std::vector<hazard_kind>{hazard_kind::race}) << reports(ranks.hazards);
  EXPECT_THAT(hazard::describe(ranks.hazards.hazards()[0]), HasSubstr("`produce again` on `rank 0 producer`"));
}

// Until every rank's part has arrived, no stream is ordered by the collective.
TEST(CollectiveHazards, ACollectiveOnlyOneRankIssuedOrdersNothing) {
  two_ranks ranks;
  ranks.produce(4.0F, "produce");
  ranks.hazards.on(ranks.producer).reads(ranks.peer, kBytes).writes(ranks.peer, kBytes).launch(
      kernel{.name = "all_reduce 'grads'", .cuda = {}, .sim = [] {}});
  ranks.hazards.track_collective(ranks.producer, 7, 0, 2);
  (void)ranks.peer_read();
  EXPECT_EQ(kinds(ranks.hazards), std::vector<hazard_kind>{hazard_kind::race}) << reports(ranks.hazards);
}

TEST(CollectiveHazards, ATrackerOfOneDeviceHasNoOtherPartToOrder) {
  Device device = threaded_sim();
  hazard::tracker hazards(device, policy::report);
  Stream stream(device, stream_options{.name = "comm"});
  hazards.track_collective(stream, 7, 0, 2);
  EXPECT_EQ(hazards.events_tracked(), 0U);
  EXPECT_THROW(hazards.track_collective(stream, 7, 1, 0), usage_error);
}

TEST(CollectiveHazards, ATrackerOverSeveralDevicesRefusesEnforceAndRepeatedDevices) {
  std::array<Device, 2> devices{threaded_sim(), threaded_sim()};
  try {
    hazard::tracker refused(std::span<const Device>(devices), policy::enforce);
    FAIL() << "enforce over two devices was accepted";
  } catch (const usage_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("enforce needs a tracker of one device"));
  }
  const std::array<Device, 2> twice{devices[0], devices[0]};
  EXPECT_THROW(hazard::tracker(std::span<const Device>(twice), policy::report), usage_error);
  EXPECT_THROW(hazard::tracker(std::span<const Device>(), policy::report), usage_error);
}

}  // namespace
}  // namespace streamsafe::collectives::testing
