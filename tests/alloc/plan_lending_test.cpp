// What the caching allocator lends its repeat plan (src/alloc/plan_lending.cpp): free blocks
// whose bytes are all mapped, out of the pools' reach while lent, and given back with the
// pool's stream ordered after the streams that used them in the plan, with their work still
// queued when the pool takes the bytes again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "alloc/caching_allocator_impl.hpp"
#include "backends.hpp"
#include "reuse_oracle.hpp"

namespace streamsafe {
namespace {

using testing::reuse_oracle;
using testing::test_backend;

constexpr std::size_t mib = 1024 * 1024;
constexpr std::uint32_t late_data = 0x1A7E1A7E;
constexpr std::uint32_t new_data = 0x0E3D0E3D;

class PlanLending : public ::testing::TestWithParam<test_backend> {
 protected:
  void SetUp() override {
    if (GetParam() == test_backend::cuda && Device::cuda_device_count() == 0) {
      GTEST_SKIP() << "no CUDA device here (the cuda variant runs on a GPU machine)";
    }
    device_.emplace(testing::make_device(GetParam(), 1, 256 * mib));
    a_.emplace(*device_, stream_options{.name = "a"});
    late_.emplace(*device_, testing::slow_stream("late"));
    impl_.emplace(*device_, allocator_options{.repeat_plan = false});
  }
  /// A block of `bytes` allocated on a and freed: a's pool holds it, free and mapped.
  void* cached_on_a(std::size_t bytes) {
    void* p = impl_->allocate(bytes, *a_);
    impl_->deallocate(p);
    return p;
  }
  [[nodiscard]] static const detail::lent_range* range_at(const std::vector<detail::lent_range>& lent, void* p) {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    const auto it = std::find_if(lent.begin(), lent.end(), [at](const auto& r) { return at - r.address < r.bytes; });
    return it == lent.end() ? nullptr : &*it;
  }

  std::optional<Device> device_;
  std::optional<Stream> a_;
  std::optional<Stream> late_;
  std::optional<detail::caching_allocator_impl> impl_;
};

TEST_P(PlanLending, ALentBlockIsOutOfThePoolsReachUntilItComesBack) {
  void* p = cached_on_a(4 * mib);
  detail::plan_host& host = *impl_;
  const std::vector<detail::lent_range> lent = host.lend_free_memory(8);
  const detail::lent_range* range = range_at(lent, p);
  ASSERT_NE(range, nullptr) << "a's free block is lent";
  EXPECT_EQ(range->lender.get(), &a_->impl());
  void* q = impl_->allocate(4 * mib, *a_);
  EXPECT_EQ(range_at(lent, q), nullptr) << "the pool served bytes it lent";
  impl_->deallocate(q);
  for (const auto& r : lent) host.take_back(r, {});
  void* again = impl_->allocate(4 * mib, *a_);
  EXPECT_EQ(again, p) << "the bytes are the pool's again";
  impl_->deallocate(again);
}

TEST_P(PlanLending, ABlockGivenBackIsReusedOnlyAfterTheWorkOfTheStreamsThatUsedItInThePlan) {
  void* p = cached_on_a(4 * mib);
  detail::plan_host& host = *impl_;
  const std::vector<detail::lent_range> lent = host.lend_free_memory(8);
  const detail::lent_range* range = range_at(lent, p);
  ASSERT_NE(range, nullptr);
  reuse_oracle oracle(*device_);
  oracle.late_write(*late_, p, 4 * mib, late_data);  // the plan's user, still writing
  std::vector<detail::StreamImpl*> users{&late_->impl()};
  for (const auto& r : lent) host.take_back(r, &r == range ? users : std::vector<detail::StreamImpl*>{});
  void* again = impl_->allocate(4 * mib, *a_);
  ASSERT_EQ(again, p) << "the pool takes the same bytes again (else this test sees nothing)";
  oracle.claim(*a_, again, 4 * mib, new_data);
  EXPECT_TRUE(oracle.settle());
  impl_->deallocate(again);
}

TEST_P(PlanLending, ReleasingThePoolsCacheLeavesALentBlockMappedUnderItsUsersWork) {
  // A plan kept one lent range and the rest went back (what the plan does not use): the pools'
  // free memory goes to the device while the plan's user still writes the lent bytes.
  void* kept = impl_->allocate(4 * mib, *a_);
  void* spare = impl_->allocate(4 * mib, *a_);  // between them: two free runs, not one
  void* other = impl_->allocate(4 * mib, *a_);
  impl_->deallocate(kept);
  impl_->deallocate(other);
  detail::plan_host& host = *impl_;
  const std::vector<detail::lent_range> lent = host.lend_free_memory(8);
  const detail::lent_range* range = range_at(lent, kept);
  ASSERT_NE(range, nullptr);
  ASSERT_EQ(lent.size(), 2u);
  for (const auto& r : lent) {
    if (&r != range) host.take_back(r, {});
  }
  const auto reserved_before = impl_->stats().reserved_bytes.current;
  reuse_oracle oracle(*device_);
  oracle.late_write(*late_, kept, 4 * mib, late_data);  // the plan's user, still writing
  host.release_pool_cache();
  EXPECT_LT(impl_->stats().reserved_bytes.current, reserved_before) << "the free memory went back (else this test sees nothing)";
  oracle.claim(*late_, kept, 4 * mib, new_data);  // after the write, on its stream: the bytes must be there
  EXPECT_TRUE(oracle.settle());
  host.take_back(*range, {&late_->impl()});
  impl_->deallocate(spare);
}

TEST_P(PlanLending, ReleasingWhenDoneWaitsForTheStreamsQueuedWorkWithoutBlockingTheHost) {
  // The pools' free memory goes to the device after a repeat plan's first period (the chunks
  // cached beside its arena), while the stream that freed it still has its last write queued.
  void* p = impl_->allocate(4 * mib, *late_);
  reuse_oracle oracle(*device_);
  // Several writes, so that the queries below (each lets a starved sim stream run one step) do
  // not see the work done.
  for (int i = 0; i < 8; ++i) oracle.late_write(*late_, p, 4 * mib, late_data);
  impl_->deallocate(p);  // free in late's pool, its writes still queued
  const allocator_stats before = impl_->stats();
  detail::plan_host& host = *impl_;
  host.release_pool_cache_when_done();
  const allocator_stats waiting = impl_->stats();
  EXPECT_EQ(waiting.num_host_syncs, before.num_host_syncs) << "the host never waits for the release";
  EXPECT_EQ(waiting.reserved_bytes.current, before.reserved_bytes.current) << "held until the write is done";
  EXPECT_TRUE(host.finish_releases()) << "the write is still queued";
  oracle.claim(*late_, p, 4 * mib, new_data);  // after the write, on its stream: the bytes must be there
  EXPECT_TRUE(oracle.settle());                 // (the sim faults on an unmapped chunk)
  EXPECT_FALSE(host.finish_releases()) << "the work is done: the memory went back";
  EXPECT_LT(impl_->stats().reserved_bytes.current, before.reserved_bytes.current);
  EXPECT_EQ(impl_->stats().num_host_syncs, before.num_host_syncs);
}

TEST_P(PlanLending, AGrowthWhileAReleaseWaitsTakesItsChunksBackInsteadOfMappingNewOnes) {
  void* p = impl_->allocate(4 * mib, *late_);
  reuse_oracle oracle(*device_);
  oracle.late_write(*late_, p, 4 * mib, late_data);
  impl_->deallocate(p);
  detail::plan_host& host = *impl_;
  host.release_pool_cache_when_done();
  const allocator_stats waiting = impl_->stats();
  void* again = impl_->allocate(4 * mib, *late_);  // the pool's only free chunks are the waiting ones
  EXPECT_EQ(again, p);
  EXPECT_EQ(impl_->stats().device_calls.total(), waiting.device_calls.total()) << "mapped still: nothing to map";
  EXPECT_EQ(impl_->stats().reserved_bytes.current, waiting.reserved_bytes.current);
  EXPECT_FALSE(host.finish_releases()) << "nothing waits any more";
  oracle.claim(*late_, again, 4 * mib, new_data);  // on the same stream: ordered after the write
  EXPECT_TRUE(oracle.settle());
  impl_->deallocate(again);
}

TEST_P(PlanLending, AStreamGoneWhileItsMemoryWaitsIsRetiredWithThatMemory) {
  // The pool of a stream the user destroyed is retired once the stream is idle: its memory
  // waiting to go back goes with the rest, and nothing is left to give back twice.
  std::optional<Stream> gone(std::in_place, *device_, testing::slow_stream("gone"));
  const std::int64_t reserved_before = impl_->stats().reserved_bytes.current;
  void* p = impl_->allocate(4 * mib, *gone);
  reuse_oracle oracle(*device_);
  for (int i = 0; i < 8; ++i) oracle.late_write(*gone, p, 4 * mib, late_data);
  impl_->deallocate(p);
  detail::plan_host& host = *impl_;
  host.release_pool_cache_when_done();
  ASSERT_TRUE(host.finish_releases()) << "the writes are still queued";
  gone.reset();
  ASSERT_TRUE(oracle.settle());  // the device is idle: the pool may be retired
  Stream fresh(*device_, stream_options{.name = "fresh"});
  void* q = impl_->allocate(1 * mib, fresh);  // a new pool: the gone stream's is retired
  EXPECT_FALSE(host.finish_releases()) << "retired with its pool: nothing waits";
  impl_->deallocate(q);
  impl_->release_pool_cache();
  EXPECT_EQ(impl_->stats().reserved_bytes.current, reserved_before) << "every chunk went back once";
}

INSTANTIATE_TEST_SUITE_P(Backends, PlanLending,
                         ::testing::Values(test_backend::sim_deterministic, test_backend::sim_threaded, test_backend::cuda),
                         [](const ::testing::TestParamInfo<test_backend>& info) { return testing::to_string(info.param); });

}  // namespace
}  // namespace streamsafe
