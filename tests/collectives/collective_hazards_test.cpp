// One hazard tracker over several sim ranks' devices in one process: a rank reading another
// rank's buffer is checked against that rank's writes, a device synchronization orders that
// device's streams only, and an all-reduce orders every rank's stream after the work every rank
// issued before it (and nothing issued after). The producer's kernels wait on a gate the test
// opens, so a read that the runtime does not order after them really gets the old bytes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "../hazard/tracker_support.hpp"
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
using streamsafe::testing::kinds;

constexpr std::size_t kCount = 1024;
constexpr std::size_t kBytes = kCount * sizeof(float);

Device threaded_sim() {
  return Device::sim(sim_options{.memory_capacity = std::size_t{16} << 20, .mode = sim_mode::threaded});
}

/// Fills `data` with `value` once `held` is open.
kernel fill_with(float* data, float value, std::string name, gate& held) {
  return kernel{.name = std::move(name), .cuda = {}, .sim = [=, &held] {
                  held.pass();
                  std::fill(data, data + kCount, value);
                }};
}

std::string reports(const hazard::tracker& tracker) {
  std::string text;
  for (const auto& h : tracker.hazards()) text += hazard::describe(h) + "\n";
  return text;
}

/// Two ranks, one tracker over both devices. Rank 0 writes `peer` on its producer stream once
/// the test opens a gate; rank 1 copies it into `local` on its own stream.
struct two_ranks {
  std::array<Device, 2> devices{threaded_sim(), threaded_sim()};
  hazard::tracker hazards{std::span<const Device>(devices), policy::report};
  gate first_fill;
  gate second_fill;
  Stream producer{devices[0], stream_options{.name = "rank 0 producer"}};
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
    first_fill.open();
    second_fill.open();
    devices[0].synchronize();
    devices[1].synchronize();
    devices[0].deallocate(peer);
    devices[1].deallocate(local);
    devices[1].deallocate(rank1_grads);
  }
  two_ranks(const two_ranks&) = delete;
  two_ranks& operator=(const two_ranks&) = delete;

  void produce(float value, const std::string& name, gate& held) {
    hazards.on(producer).writes(peer, kBytes).launch(fill_with(peer, value, name, held));
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
void tracked_all_reduce(hazard::tracker& hazards, communicator& comm, StreamRef stream, float* buffer) {
  const kernel marker{.name = "all_reduce 'grads'", .cuda = {}, .sim = [] {}};
  hazards.on(stream).reads(buffer, kBytes).writes(buffer, kBytes).launch(marker);
  hazards.track_collective(stream, comm.group_id(), static_cast<std::size_t>(comm.size()));
  comm.all_reduce(buffer, kCount, data_type::float32, reduce_op::sum, stream, collective_label{.bucket = 0, .name = "grads"});
}

TEST(CollectiveHazards, APeerReadBeforeTheProducerFinishedIsReported) {
  two_ranks ranks;
  ranks.produce(4.0F, "produce", ranks.first_fill);
  EXPECT_THAT(ranks.peer_read(), Not(Each(Eq(4.0F))));  // the bug is real: old bytes
  ASSERT_EQ(kinds(ranks.hazards), std::vector<hazard_kind>{hazard_kind::race}) << reports(ranks.hazards);
  const std::string text = hazard::describe(ranks.hazards.hazards()[0]);
  EXPECT_THAT(text, HasSubstr("`copy` on `rank 1 consumer`"));
  EXPECT_THAT(text, HasSubstr("`produce` on `rank 0 producer`"));
}

TEST(CollectiveHazards, APeerReadAfterTheHostSawTheProducerFinishIsClean) {
  two_ranks ranks;
  ranks.produce(4.0F, "produce", ranks.first_fill);
  ranks.first_fill.open();
  ranks.producer.synchronize();
  EXPECT_THAT(ranks.peer_read(), Each(Eq(4.0F)));
  EXPECT_TRUE(ranks.hazards.hazards().empty()) << reports(ranks.hazards);
}

TEST(CollectiveHazards, SynchronizingTheReadersDeviceDoesNotOrderAPeerRead) {
  two_ranks ranks;
  ranks.produce(4.0F, "produce", ranks.first_fill);
  ranks.devices[1].synchronize();
  EXPECT_THAT(ranks.peer_read(), Not(Each(Eq(4.0F))));
  EXPECT_EQ(kinds(ranks.hazards), std::vector<hazard_kind>{hazard_kind::race}) << reports(ranks.hazards);
}

TEST(CollectiveHazards, SynchronizingTheProducersDeviceOrdersAPeerRead) {
  two_ranks ranks;
  ranks.produce(4.0F, "produce", ranks.first_fill);
  ranks.first_fill.open();
  ranks.devices[0].synchronize();
  EXPECT_THAT(ranks.peer_read(), Each(Eq(4.0F)));
  EXPECT_TRUE(ranks.hazards.hazards().empty()) << reports(ranks.hazards);
}

// The producer's stream is gone before the device synchronization, its work still queued: the
// engine keeps that work, and the device's synchronization orders it too, without a new slot
// per synchronization.
TEST(CollectiveHazards, SynchronizingADeviceOrdersTheWorkOfItsDestroyedStreams) {
  two_ranks ranks;
  {
    Stream gone(ranks.devices[0], stream_options{.name = "rank 0 destroyed producer"});
    ranks.hazards.on(gone).writes(ranks.peer, kBytes).launch(fill_with(ranks.peer, 4.0F, "produce", ranks.first_fill));
  }
  const std::size_t slots = ranks.hazards.stream_slots();
  ranks.first_fill.open();
  for (int i = 0; i < 3; ++i) ranks.devices[0].synchronize();
  EXPECT_THAT(ranks.peer_read(), Each(Eq(4.0F)));
  EXPECT_TRUE(ranks.hazards.hazards().empty()) << reports(ranks.hazards);
  EXPECT_LE(ranks.hazards.stream_slots(), slots);
}

// Rank 1's all-reduce completes only once rank 0's has begun, after rank 0's producer: the
// reduced buffer rank 1 then reads from rank 0 holds the sum, and nothing is reported.
TEST(CollectiveHazards, AnAllReduceOrdersEveryRanksStreamAfterEveryRanksWorkBeforeIt) {
  two_ranks ranks;
  group_of_two comms;
  ranks.produce(4.0F, "produce", ranks.first_fill);
  tracked_all_reduce(ranks.hazards, comms.rank0, ranks.producer, ranks.peer);
  tracked_all_reduce(ranks.hazards, comms.rank1, ranks.consumer, ranks.rank1_grads);
  ranks.first_fill.open();  // rank 1's all-reduce, and the read after it, wait for rank 0's part
  EXPECT_THAT(ranks.peer_read(), Each(Eq(4.0F)));
  EXPECT_TRUE(ranks.hazards.hazards().empty()) << reports(ranks.hazards);
  EXPECT_EQ(ranks.hazards.events_tracked(), 0U);  // the collective's arrival clocks are gone
}

// Rank 0 writes its buffer again after its own all-reduce: the collective orders rank 1 after
// what rank 0 issued before it, not after this, so rank 1's read races with the new write.
TEST(CollectiveHazards, WorkARankIssuesAfterItsAllReduceIsNotOrderedByIt) {
  two_ranks ranks;
  group_of_two comms;
  ranks.produce(4.0F, "produce", ranks.first_fill);
  tracked_all_reduce(ranks.hazards, comms.rank0, ranks.producer, ranks.peer);
  ranks.produce(9.0F, "produce again", ranks.second_fill);
  tracked_all_reduce(ranks.hazards, comms.rank1, ranks.consumer, ranks.rank1_grads);
  ranks.first_fill.open();
  EXPECT_THAT(ranks.peer_read(), Not(Each(Eq(9.0F))));
  ASSERT_EQ(kinds(ranks.hazards), std::vector<hazard_kind>{hazard_kind::race}) << reports(ranks.hazards);
  EXPECT_THAT(hazard::describe(ranks.hazards.hazards()[0]), HasSubstr("`produce again` on `rank 0 producer`"));
}

// A group whose other rank this tracker never sees (it runs in another process): each
// collective waits for a part that never comes, and the tracker keeps the last 64 of them.
TEST(CollectiveHazards, AGroupWhoseOtherRankNeverArrivesKeepsItsLast64Collectives) {
  two_ranks ranks;
  for (int i = 0; i < 200; ++i) ranks.hazards.track_collective(ranks.producer, 7, 2);
  EXPECT_EQ(ranks.hazards.events_tracked(), 64U);
  EXPECT_THROW(ranks.hazards.track_collective(ranks.producer, 7, 0), usage_error);
  const Device elsewhere = threaded_sim();
  EXPECT_THROW(ranks.hazards.track_collective(elsewhere.default_stream(), 7, 2), usage_error);
}

TEST(CollectiveHazards, ATrackerOfOneDeviceHasNoOtherPartToOrder) {
  Device device = threaded_sim();
  hazard::tracker hazards(device, policy::report);
  Stream stream(device, stream_options{.name = "comm"});
  hazards.track_collective(stream, 7, 2);
  EXPECT_EQ(hazards.events_tracked(), 0U);
}

TEST(CollectiveHazards, ATrackerOverSeveralDevicesRefusesEnforceAndRepeatedDevices) {
  std::array<Device, 2> devices{threaded_sim(), threaded_sim()};
  try {
    hazard::tracker refused(std::span<const Device>(devices), policy::enforce);
    FAIL() << "enforce over two devices was accepted";
  } catch (const usage_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("enforce needs a tracker of one device"));
  }
  const std::array<Device, 2> deterministic{Device::sim(), Device::sim()};
  try {
    hazard::tracker refused(std::span<const Device>(deterministic), policy::report);
    FAIL() << "deterministic sim devices were accepted";
  } catch (const usage_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs threaded sim devices"));
  }
  const std::array<Device, 2> twice{devices[0], devices[0]};
  EXPECT_THROW(hazard::tracker(std::span<const Device>(twice), policy::report), usage_error);
  EXPECT_THROW(hazard::tracker(std::span<const Device>(), policy::report), usage_error);
}

}  // namespace
}  // namespace streamsafe::collectives::testing
