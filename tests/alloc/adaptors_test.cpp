// The debug adaptors and the typed buffer.
#include <gtest/gtest.h>

#include <cstdint>

#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/device_buffer.hpp"
#include "streamsafe/alloc/memory_resource.hpp"
#include "streamsafe/alloc/poison_adaptor.hpp"
#include "streamsafe/alloc/resource_ref.hpp"
#include "streamsafe/alloc/uncached_resource.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe {
namespace {

TEST(PoisonAdaptor, FreedMemoryHoldsThePatternAndIsReusedAtOnce) {
  Device device = Device::sim(sim_options{.memory_capacity = 16 << 20});
  Stream stream(device);
  caching_allocator alloc(device, allocator_options{});
  poison_adaptor poisoned(alloc);
  auto* p = static_cast<std::uint8_t*>(poisoned.allocate(4096, stream));
  stream.fill(p, 7, 4096);
  poisoned.deallocate(p);
  auto* q = static_cast<std::uint8_t*>(poisoned.allocate(4096, stream));
  EXPECT_EQ(p, q);
  stream.synchronize();
  EXPECT_EQ(q[0], poison_adaptor::default_pattern);
  EXPECT_EQ(q[4095], poison_adaptor::default_pattern);
  poisoned.deallocate(q);
}

static_assert(!stream_ordered_resource<int>, "the concept must reject what is not a resource");
static_assert(stream_ordered_resource<resource_ref>);

// The adaptor knows the blocks allocated through it: one allocated elsewhere, or freed already,
// is refused before anything reaches the upstream.
TEST(PoisonAdaptor, RefusesPointersNotAllocatedThroughIt) {
  Device device = Device::sim(sim_options{.memory_capacity = 16 << 20});
  Stream stream(device);
  uncached_resource upstream(device);
  poison_adaptor poisoned(upstream, device);
  void* direct = upstream.allocate(4096, stream);
  EXPECT_THROW(poisoned.deallocate(direct), usage_error);
  EXPECT_THROW(poisoned.record_stream(direct, stream), usage_error);
  upstream.deallocate(direct);  // still live upstream: the adaptor changed nothing
  void* p = poisoned.allocate(4096, stream);
  poisoned.deallocate(p);
  EXPECT_THROW(poisoned.deallocate(p), usage_error);
  device.synchronize();
  EXPECT_EQ(device.memory().free_bytes, device.memory().total_bytes);
}

TEST(UncachedResource, FreesAreStreamOrderedAndHonourRecordStream) {
  Device device = Device::sim(sim_options{.memory_capacity = 16 << 20});
  Stream stream(device);
  Stream slow(device, stream_options{.pacing = sim_pacing::starved});
  uncached_resource resource(device);
  void* p = resource.allocate(4096, stream);
  slow.fill(p, 1, 4096);
  resource.record_stream(p, slow);
  resource.deallocate(p);
  EXPECT_THROW(resource.deallocate(p), usage_error);
  device.synchronize();
  EXPECT_EQ(device.memory().free_bytes, device.memory().total_bytes);
}

TEST(DeviceBuffer, OwnsItsMemory) {
  Device device = Device::sim(sim_options{.memory_capacity = 16 << 20});
  Stream stream(device);
  caching_allocator alloc(device, allocator_options{});
  {
    device_buffer<float, caching_allocator> buffer(alloc, 1000, stream);
    EXPECT_EQ(buffer.size_bytes(), 4000u);
    EXPECT_EQ(alloc.stats().allocation.current, 1);
    device_buffer<float, caching_allocator> moved(std::move(buffer));
    EXPECT_EQ(buffer.data(), nullptr);
    EXPECT_EQ(alloc.stats().allocation.current, 1);
  }
  EXPECT_EQ(alloc.stats().allocation.current, 0);
}

}  // namespace
}  // namespace streamsafe
