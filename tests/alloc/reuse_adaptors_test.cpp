// The adaptors' and uncached_resource's rules with device work still queued at the free
// (reuse_oracle.hpp), and their streams destroyed before their blocks.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "backends.hpp"
#include "reuse_oracle.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/device_buffer.hpp"
#include "streamsafe/alloc/poison_adaptor.hpp"
#include "streamsafe/alloc/uncached_resource.hpp"

namespace streamsafe {
namespace {

using testing::reuse_oracle;
using testing::test_backend;

constexpr std::size_t bytes = 64 * 1024;
constexpr std::uint32_t old_data = 0x0DDA7A00;
constexpr std::uint32_t late_data = 0x1A7E1A7E;
constexpr std::uint32_t new_data = 0x0E3D0E3D;

// uncached_resource ------------------------------------------------------------------------------

class UncachedReuse : public testing::BackendTest {};

TEST_P(UncachedReuse, TheFreeWaitsForTheRecordedStreamsQueuedWork) {
  uncached_resource resource(device());
  reuse_oracle oracle(device());
  Stream owner(device(), {.name = "owner"});
  Stream late(device(), testing::slow_stream("late"));
  Stream next(device(), {.name = "next"});
  void* p = resource.allocate(bytes, owner);
  reuse_oracle::write(owner, p, bytes, old_data);
  late.wait(owner);
  oracle.late_read(late, p, bytes, old_data);
  oracle.late_write(late, p, bytes, late_data);
  resource.record_stream(p, late);
  resource.deallocate(p);
  owner.synchronize();  // the free has run: the device may hand the memory out again
  void* q = resource.allocate(bytes, next);
  if (GetParam() != test_backend::cuda) {
    ASSERT_EQ(p, q) << "the sim arena hands out the lowest free range first";
  }
  oracle.claim(next, q, bytes, new_data);
  EXPECT_TRUE(oracle.settle());
  resource.deallocate(q);
}

TEST_P(UncachedReuse, AStreamMayBeDestroyedBeforeItsBlocksFree) {
  uncached_resource resource(device());
  void* p = nullptr;
  {
    Stream owner(device(), {.name = "gone first"});
    p = resource.allocate(bytes, owner);
    owner.launch(testing::fill_kernel(static_cast<std::uint32_t*>(p), bytes / 4, old_data));
  }
  resource.deallocate(p);  // ordered on the destroyed stream, which the resource kept (ASan in CI)
  device().synchronize();
  if (GetParam() != test_backend::cuda) EXPECT_EQ(device().memory().free_bytes, device().memory().total_bytes);
}

TEST_P(UncachedReuse, ARecordedStreamMayBeDestroyedBeforeTheFree) {
  uncached_resource resource(device());
  Stream owner(device(), {.name = "owner"});
  void* p = resource.allocate(bytes, owner);
  void* pending = resource.allocate(bytes, owner);
  {
    Stream reader(device(), testing::slow_stream("reader, gone first"));
    reader.wait(owner);
    resource.record_stream(p, reader);
    resource.record_stream(pending, reader);
    resource.deallocate(pending);  // queued behind the reader's event, the reader then goes
  }
  resource.deallocate(p);  // waits on an event recorded on the destroyed reader
  device().synchronize();
  if (GetParam() != test_backend::cuda) EXPECT_EQ(device().memory().free_bytes, device().memory().total_bytes);
}

STREAMSAFE_ALL_BACKENDS(UncachedReuse);

// poison_adaptor ---------------------------------------------------------------------------------

/// The adaptor over a caching allocator: a block freed by its stream is reused at once.
struct poisoned_cache {
  explicit poisoned_cache(const Device& device) : upstream(device, allocator_options{}), poisoned(upstream) {}
  static void before_reuse(StreamRef /*owner*/) {}
  caching_allocator upstream;
  poison_adaptor poisoned;
};

/// The adaptor over a resource without a cache: the block is the device's again once the
/// stream-ordered free has run, and the sim arena hands out the lowest free range first.
struct poisoned_uncached {
  explicit poisoned_uncached(const Device& device) : upstream(device), poisoned(upstream, device) {}
  static void before_reuse(StreamRef owner) { owner.synchronize(); }
  uncached_resource upstream;
  poison_adaptor poisoned;
};

/// One trial of a reader on a lagging stream that reads a block the host then frees through the
/// adaptor, after which the block's stream allocates again and writes. What the reader saw is
/// checked by the oracle, whose verdict this returns.
template <typename Rig>
::testing::AssertionResult reader_trial(const Device& device, bool record_reader) {
  Rig rig(device);
  poison_adaptor& poisoned = rig.poisoned;
  reuse_oracle oracle(device);
  Stream owner(device, {.name = "owner"});
  Stream reader(device, testing::slow_stream("reader"));
  void* p = poisoned.allocate(bytes, owner);
  reuse_oracle::write(owner, p, bytes, old_data);
  reader.wait(owner);
  oracle.late_read(reader, p, bytes, old_data);
  if (record_reader) poisoned.record_stream(p, reader);
  poisoned.deallocate(p);
  Rig::before_reuse(owner);
  void* next = poisoned.allocate(bytes, owner);
  if (!record_reader && next != p) {
    return ::testing::AssertionFailure() << "the block was not reused: the trial shows nothing";
  }
  oracle.claim(owner, next, bytes, new_data);
  ::testing::AssertionResult verdict = oracle.settle();
  poisoned.deallocate(next);
  return verdict;
}

constexpr std::uint64_t trials = 200;

template <typename Rig>
void expect_recorded_reader_reads_its_own_data() {
  for (std::uint64_t seed = 1; seed <= trials; ++seed) {
    const Device device = Device::sim(
        sim_options{.memory_capacity = 16 << 20, .seed = seed, .max_background_steps = static_cast<unsigned>(seed % 4)});
    ASSERT_TRUE(reader_trial<Rig>(device, true)) << "seed " << seed;
  }
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const Device device = testing::make_device(test_backend::sim_threaded, seed);
    ASSERT_TRUE(reader_trial<Rig>(device, true)) << "threaded, seed " << seed;
  }
}

template <typename Rig>
void expect_missing_record_stream_shows() {
  for (std::uint64_t seed = 1; seed <= trials; ++seed) {
    const Device device = Device::sim(sim_options{.memory_capacity = 16 << 20, .seed = seed});
    const ::testing::AssertionResult verdict = reader_trial<Rig>(device, false);
    ASSERT_FALSE(verdict) << "seed " << seed << ": the reader read the freed block's old data";
    ASSERT_EQ(std::string(verdict.message()).find("not reused"), std::string::npos)
        << "seed " << seed << ": " << verdict.message();
  }
}

TEST(PoisonAdaptor, ARecordedReaderReadsItsOwnDataInEveryTrial) {
  expect_recorded_reader_reads_its_own_data<poisoned_cache>();
}
TEST(PoisonAdaptor, AMissingRecordStreamShowsInEveryTrial) { expect_missing_record_stream_shows<poisoned_cache>(); }
// The same adaptor over a second resource: the rules come from the concept, not the cache.
TEST(PoisonAdaptorOverUncached, ARecordedReaderReadsItsOwnDataInEveryTrial) {
  expect_recorded_reader_reads_its_own_data<poisoned_uncached>();
}
TEST(PoisonAdaptorOverUncached, AMissingRecordStreamShowsInEveryTrial) {
  expect_missing_record_stream_shows<poisoned_uncached>();
}

class PoisonReuse : public testing::BackendTest {};

TEST_P(PoisonReuse, ThePatternLandsBeforeTheNextOwnersData) {
  caching_allocator alloc(device(), allocator_options{});
  poison_adaptor poisoned(alloc);
  reuse_oracle oracle(device());
  Stream owner(device(), {.name = "owner"});
  Stream late(device(), testing::slow_stream("late"));
  void* p = poisoned.allocate(bytes, owner);
  late.wait(owner);
  oracle.late_write(late, p, bytes, late_data);
  poisoned.record_stream(p, late);
  poisoned.deallocate(p);
  alloc.process_pending_frees();
  void* q = poisoned.allocate(bytes, owner);
  oracle.claim(owner, q, bytes, new_data);
  EXPECT_TRUE(oracle.settle());
  poisoned.deallocate(q);
  void* again = poisoned.allocate(bytes, owner);
  ASSERT_EQ(again, q) << "same-stream reuse of a block without recorded streams";
  const std::vector<std::uint32_t> seen = testing::read_back(owner, static_cast<std::uint32_t*>(again), bytes / 4);
  EXPECT_EQ(seen.front(), 0xA5A5A5A5u);
  EXPECT_EQ(seen.back(), 0xA5A5A5A5u);
  poisoned.deallocate(again);
}

TEST_P(PoisonReuse, ARecordedStreamMayBeDestroyedBeforeTheFree) {
  caching_allocator alloc(device(), allocator_options{});
  poison_adaptor poisoned(alloc);
  Stream owner(device(), {.name = "owner"});
  void* p = poisoned.allocate(bytes, owner);
  {
    Stream reader(device(), testing::slow_stream("reader, gone first"));
    reader.wait(owner);
    poisoned.record_stream(p, reader);
  }
  poisoned.deallocate(p);  // the poisoner waits on the destroyed reader, which the adaptor kept
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().pending_free_blocks, 0);
}

STREAMSAFE_ALL_BACKENDS(PoisonReuse);

// device_buffer ----------------------------------------------------------------------------------

class DeviceBufferReuse : public testing::BackendTest {};

TEST_P(DeviceBufferReuse, ARecordedStreamHoldsTheBufferPastItsReset) {
  caching_allocator alloc(device(), allocator_options{});
  reuse_oracle oracle(device());
  Stream owner(device(), {.name = "owner"});
  Stream late(device(), testing::slow_stream("late"));
  std::optional<device_buffer<std::uint32_t, caching_allocator>> buffer(std::in_place, alloc, bytes / 4, owner);
  reuse_oracle::write(owner, buffer->data(), bytes, old_data);
  late.wait(owner);
  oracle.late_read(late, buffer->data(), bytes, old_data);
  buffer->record_stream(late);
  buffer.reset();
  device_buffer<std::uint32_t, caching_allocator> next(alloc, bytes / 4, owner);
  oracle.claim(owner, next.data(), bytes, new_data);
  EXPECT_TRUE(oracle.settle());
}

STREAMSAFE_ALL_BACKENDS(DeviceBufferReuse);

}  // namespace
}  // namespace streamsafe
