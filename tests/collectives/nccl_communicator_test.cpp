// The nccl communicator on real GPUs: one rank on one GPU runs the multi-rank code path; with
// two GPUs or more, ranks on threads of this process (one GPU each) check sums and the order
// check. Skips without a GPU.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <memory>
#include <thread>
#include <vector>

#include "streamsafe/device.hpp"
#include "streamsafe/pipeline/collectives/bucket_reducer.hpp"
#include "streamsafe/pipeline/collectives/nccl_communicator.hpp"

namespace streamsafe::collectives {
namespace {

using ::testing::HasSubstr;

// Four equal buckets, so a reordering keeps NCCL's byte counts equal and only the check sees it.
std::vector<gradient> equal_gradients() { return {{"l0", 1 << 20}, {"l1", 1 << 20}, {"l2", 1 << 20}, {"l3", 1 << 20}}; }

/// Rank `rank`'s step: gradients uploaded on the producer stream bucket by bucket, reduced on the
/// comm stream, read back after the optimizer stream's wait. Returns the values read back.
std::vector<float> reduce_step(nccl_communicator& comm, const bucket_plan& plan, const std::vector<std::uint32_t>& order) {
  Device device = Device::cuda(comm.rank());
  Stream producer(device, stream_options{.name = "backward"});
  Stream comm_stream(device, stream_options{.name = "comm"});
  Stream optimizer(device, stream_options{.name = "optimizer"});
  const std::size_t count = plan.total_bytes() / sizeof(float);
  std::unique_ptr<float, std::function<void(float*)>> host(static_cast<float*>(device.allocate_pinned(plan.total_bytes())),
                                                           [device](float* p) mutable { device.deallocate_pinned(p); });
  std::unique_ptr<float, std::function<void(float*)>> grads(static_cast<float*>(device.allocate(plan.total_bytes())),
                                                            [device](float* p) mutable { device.deallocate(p); });
  for (std::size_t i = 0; i < count; ++i) host.get()[i] = static_cast<float>(comm.rank() + 1);
  bucket_reducer reducer(comm, plan, grads.get(), comm_stream);
  reducer.begin_step(0);
  for (auto id : order) {
    const bucket& b = plan.buckets()[id];
    producer.copy(reinterpret_cast<char*>(grads.get()) + b.offset, reinterpret_cast<char*>(host.get()) + b.offset, b.bytes);
    reducer.bucket_ready(id, producer);
  }
  reducer.order_after_reduce(optimizer);
  optimizer.copy(host.get(), grads.get(), plan.total_bytes());
  optimizer.synchronize();
  comm.verify_order();
  return {host.get(), host.get() + count};
}

TEST(NcclCommunicator, SingleRankRunsTheSameCodePath) {
  if (Device::cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device here";
  const auto grads = equal_gradients();
  const bucket_plan plan(grads, 1 << 20);
  nccl_communicator comm(Device::cuda(0), 0, 1, nccl_unique_id::create());
  const auto values = reduce_step(comm, plan, {0, 1, 2, 3});
  for (float v : values) ASSERT_EQ(v, 1.0F);
  EXPECT_EQ(comm.issued().records().size(), 4U);
}

/// Runs `order_of(rank)` on every GPU, one thread per rank; returns each rank's failure text.
std::vector<std::string> run_gpu_ranks(int ranks, const std::function<std::vector<std::uint32_t>(int)>& order_of) {
  const auto grads = equal_gradients();
  const bucket_plan plan(grads, 1 << 20);
  const nccl_unique_id id = nccl_unique_id::create();
  std::vector<std::string> failures(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        nccl_communicator comm(Device::cuda(r), r, ranks, id);
        for (float v : reduce_step(comm, plan, order_of(r))) {
          if (v != static_cast<float>(ranks * (ranks + 1) / 2)) throw error("wrong sum " + std::to_string(v));
        }
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

TEST(NcclCommunicator, RanksOnEveryGpuSumAndAgreeOnTheOrder) {
  const int ranks = Device::cuda_device_count();
  if (ranks < 2) GTEST_SKIP() << "needs two GPUs or more";
  for (const auto& f : run_gpu_ranks(ranks, [](int) { return std::vector<std::uint32_t>{0, 1, 2, 3}; })) {
    EXPECT_EQ(f, "");
  }
}

TEST(NcclCommunicator, RankWithAnotherOrderOfEqualBucketsIsReported) {
  const int ranks = Device::cuda_device_count();
  if (ranks < 2) GTEST_SKIP() << "needs two GPUs or more";
  const auto failures = run_gpu_ranks(ranks, [](int r) {
    return r == 1 ? std::vector<std::uint32_t>{0, 2, 1, 3} : std::vector<std::uint32_t>{0, 1, 2, 3};
  });
  for (const auto& f : failures) {
    EXPECT_THAT(f, HasSubstr("collective order mismatch in step 0: rank 1 issued [all_reduce bucket 0"));
    EXPECT_THAT(f, HasSubstr("all_reduce bucket 2 'bucket 2 [l1]' 1048576 B, all_reduce bucket 1"));
  }
}

}  // namespace
}  // namespace streamsafe::collectives
