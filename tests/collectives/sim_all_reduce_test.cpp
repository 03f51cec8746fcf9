// The sim communicator's all-reduce across ranks, through the sync stage's bucket reducer:
// correct sums with the producer still running, fixed bucket order, and overlap with backward.
#include <gtest/gtest.h>

#include <atomic>

#include "rank_setup.hpp"
#include "streamsafe/event.hpp"

namespace streamsafe::collectives::testing {
namespace {


class SimAllReduce : public RankModeTest {};

void expect_reduced(const bucket_plan& plan, const std::vector<float>& values, int ranks, std::uint64_t step, int rank) {
  std::size_t wrong = 0;
  for (std::size_t i : gradient_indices(plan)) {
    if (values[i] != reduced_value(ranks, i, step)) ++wrong;
  }
  EXPECT_EQ(wrong, 0U) << "rank " << rank << ", step " << step << ": first value " << values[0] << ", expected "
                       << reduced_value(ranks, 0, step);
}

// The producer stream is starved, so each bucket's gradients are written as late as the
// scheduler allows: a reduction that did not wait for the bucket's event sums stale bytes.
TEST_P(SimAllReduce, SumsEveryBucketAfterItsProducerWroteIt) {
  const auto grads = model_gradients();
  const bucket_plan plan(grads, kSmallCap);
  const int n = ranks();
  const auto failures = run_ranks(n, mode(), {}, [&](int rank, Device& device, communicator& comm) {
    rank_setup setup(device, comm, plan);
    for (std::uint64_t step = 0; step < 2; ++step) {
      setup.reducer.begin_step(step);
      setup.backward(plan, plan_order(plan), rank, step);
      expect_reduced(plan, setup.reduced(plan), n, step, rank);
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[static_cast<std::size_t>(r)], "") << "rank " << r;
}

TEST_P(SimAllReduce, IssuesBucketsInThePlansOrderOnEveryRank) {
  const auto grads = model_gradients();
  const bucket_plan plan(grads, kSmallCap);
  ASSERT_EQ(plan.buckets().size(), 4U);
  const auto failures = run_ranks(ranks(), mode(), {}, [&](int rank, Device& device, communicator& comm) {
    rank_setup setup(device, comm, plan);
    setup.reducer.begin_step(0);
    setup.backward(plan, plan_order(plan), rank, 0);
    (void)setup.reduced(plan);
    const auto& issued = comm.issued().records();
    ASSERT_EQ(issued.size(), plan.buckets().size());
    for (std::size_t i = 0; i < issued.size(); ++i) {
      EXPECT_EQ(issued[i].bucket, i);
      EXPECT_EQ(issued[i].bytes, plan.buckets()[i].bytes);
      EXPECT_EQ(issued[i].name, plan.buckets()[i].name);
    }
  });
  for (const auto& f : failures) EXPECT_EQ(f, "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, SimAllReduce, rank_modes(), rank_mode_name);

// Bucket 0's all-reduce must finish while later buckets' backward is still queued behind a
// closed gate on the producer stream: the reduction overlaps the rest of backward by order,
// not by luck of timing. Threaded mode: the gate blocks a stream worker, not the host.
TEST(SimAllReduceOverlap, FirstBucketReducedWhileLaterBucketsAreStillQueued) {
  const auto grads = model_gradients();
  const bucket_plan plan(grads, kSmallCap);
  constexpr int n = 2;
  const auto failures = run_ranks(n, sim_mode::threaded, {}, [&](int rank, Device& device, communicator& comm) {
    gate later_buckets;  // outlives the streams whose kernels use it
    std::atomic<bool> later_started{false};
    rank_setup setup(device, comm, plan);
    setup.reducer.begin_step(0);
    setup.backward(plan, {0}, rank, 0);
    const bucket& first = plan.buckets()[0];
    Event first_reduced(device);
    first_reduced.record(setup.comm_stream);
    setup.producer.launch(kernel{.name = "gate", .cuda = {}, .sim = [&] {
                                   later_buckets.pass();
                                   later_started = true;
                                 }});
    setup.backward(plan, {1, 2, 3}, rank, 0);
    // Ordered after bucket 0's all-reduce only: done means bucket 0's sum is there.
    Stream inspect(device, stream_options{.name = "inspect"});
    inspect.wait(first_reduced);
    const auto first_values =
        read_floats(inspect, setup.gradients.get() + first.offset / sizeof(float), first.bytes / sizeof(float));
    const bool later_had_started = later_started;
    later_buckets.open();
    for (std::size_t i = 0; i < first_values.size(); ++i) {
      ASSERT_EQ(first_values[i], reduced_value(n, first.offset / sizeof(float) + i, 0)) << "rank " << rank << ", " << i;
    }
    expect_reduced(plan, setup.reduced(plan), n, 0, rank);
    EXPECT_FALSE(later_had_started) << "rank " << rank;
    EXPECT_FALSE(later_buckets.gave_up()) << "rank " << rank << ": bucket 0 was not reduced before later backward";
  });
  for (const auto& f : failures) EXPECT_EQ(f, "");
}

}  // namespace
}  // namespace streamsafe::collectives::testing
