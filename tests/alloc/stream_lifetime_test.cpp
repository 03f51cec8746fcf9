// Streams that go before the allocator: destroyed with live blocks, with pending
// (record_stream'd) frees, or by the thousand (a stream per request). The allocator keeps a
// stream only while it holds something of it, and gives a gone stream's cache back to the
// device once the stream's work is done, never before.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "backends.hpp"
#include "runtime/stream_impl.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"

namespace streamsafe {
namespace {

using testing::read_back;
using testing::slow_stream;

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t gib = std::size_t{1} << 30;

allocator_options fixed_segments() {
  allocator_options options;
  options.segments = segment_kind::fixed;
  return options;
}

/// The stream behind a handle, observed without keeping it.
std::weak_ptr<detail::StreamImpl> watch(const Stream& stream) { return stream.impl().weak_from_this(); }

/// Fills `bytes` at `p` with `value` on `stream` and checks every 32-bit word after a device sync.
void expect_bytes(Device& device, StreamRef stream, void* p, std::size_t bytes, std::uint8_t value) {
  device.synchronize();  // every stream's work lands, the late ones included
  const std::vector<std::uint32_t> words = read_back(stream, static_cast<const std::uint32_t*>(p), bytes / 4);
  const std::uint32_t expected = 0x01010101u * value;
  std::size_t wrong = 0;
  for (const std::uint32_t w : words) wrong += w != expected ? 1 : 0;
  EXPECT_EQ(wrong, 0u) << "of " << words.size() << " words at " << p << " expected 0x" << std::hex << expected;
}

TEST(StreamLifetime, StreamDestroyedWithALiveBlockKeepsItsMemoryUntilItsWorkIsDone) {
  Device device = Device::sim(sim_options{.memory_capacity = 64 * mib});
  caching_allocator alloc(device, fixed_segments());
  void* early = nullptr;
  std::weak_ptr<detail::StreamImpl> gone;
  {
    Stream s(device, slow_stream("request"));
    gone = watch(s);
    early = alloc.allocate(mib, s);
    s.fill(early, 0xAB, mib);  // still in flight when the handle goes: s is starved
  }
  alloc.deallocate(early);  // the host frees after the stream is gone
  Stream t(device, stream_options{.name = "next"});
  void* next = alloc.allocate(mib, t);  // sweeps: the gone stream is not idle yet
  t.fill(next, 0x11, mib);
  expect_bytes(device, t, next, mib, 0x11);  // the late fill landed in memory of its own
  EXPECT_FALSE(gone.expired()) << "the allocator must keep a stream its cache may still be used by";
  alloc.empty_cache();  // the gone stream is idle now: its pool is retired
  EXPECT_TRUE(gone.expired()) << "a gone, idle stream must not be kept";
  EXPECT_EQ(alloc.stats().segment.current, 1) << "only the next stream's segment is left";
  alloc.deallocate(next);
}

TEST(StreamLifetime, LiveBlockOfAGoneStreamCanBeRecordedAndFreed) {
  Device device = Device::sim(sim_options{.memory_capacity = 64 * mib});
  caching_allocator alloc(device);
  Stream other(device, stream_options{.name = "other"});
  void* p = nullptr;
  std::weak_ptr<detail::StreamImpl> gone;
  {
    Stream s(device, stream_options{.name = "request"});
    gone = watch(s);
    p = alloc.allocate(4 * mib, s);
  }
  EXPECT_EQ(alloc.block_of(p).size, 4 * mib);
  alloc.record_stream(p, other);
  alloc.deallocate(p);
  alloc.empty_cache();
  EXPECT_TRUE(gone.expired());
  EXPECT_EQ(alloc.stats().reserved_bytes.current, 0);
}

TEST(StreamLifetime, RecordedStreamDestroyedWithAPendingFreeHoldsTheBlockUntilItsWorkIsDone) {
  Device device = Device::sim(sim_options{.memory_capacity = 64 * mib});
  caching_allocator alloc(device, fixed_segments());
  Stream a(device, stream_options{.name = "a"});
  void* p = alloc.allocate(mib, a);
  std::weak_ptr<detail::StreamImpl> gone;
  {
    Stream reader(device, slow_stream("reader"));
    gone = watch(reader);
    reader.wait(a);
    reader.fill(p, 0xCD, mib);  // in flight when the handle goes
    alloc.record_stream(p, reader);
  }
  alloc.deallocate(p);  // pending on the gone reader
  alloc.process_pending_frees();
  void* q = alloc.allocate(mib, a);  // p only if the reader is done by now
  a.fill(q, 0x22, mib);
  expect_bytes(device, a, q, mib, 0x22);
  alloc.process_pending_frees();  // the reader is done: its fence completes, its share goes
  EXPECT_TRUE(gone.expired()) << "a recorded stream must not be kept once its frees are fenced";
  EXPECT_EQ(alloc.stats().pending_free_blocks, 0);
  alloc.deallocate(q);
}

/// Resident and virtual bytes of this process (/proc/self/status: VmRSS, VmSize).
struct process_memory {
  std::size_t resident = 0;
  std::size_t virtual_size = 0;
};
process_memory read_process_memory() {
  std::ifstream status("/proc/self/status");
  process_memory m;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) m.resident = std::stoull(line.substr(6)) * 1024;
    if (line.rfind("VmSize:", 0) == 0) m.virtual_size = std::stoull(line.substr(7)) * 1024;
  }
  return m;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true;  // the sanitizers' own shadow and quarantine grow with the run
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif
#else
constexpr bool sanitized = false;
#endif

// A server that makes a stream per request: each request allocates, enqueues work, frees and
// destroys its stream. Memory must follow the live streams, not every stream ever served.
TEST(StreamLifetime, StreamPerRequestKeepsMemoryBounded) {
  constexpr std::size_t device_bytes = 4 * gib;
  constexpr int requests = 10000;
  Device device = Device::sim(sim_options{.memory_capacity = device_bytes});
  caching_allocator alloc(device);
  const process_memory before = read_process_memory();
  for (int i = 0; i < requests; ++i) {
    Stream request(device, stream_options{.name = "request"});
    void* p = alloc.allocate(mib, request);
    request.fill(p, 0x5A, 4096);
    alloc.deallocate(p);
  }
  const process_memory after = read_process_memory();
  const allocator_stats held = alloc.stats();
  RecordProperty("resident_growth_bytes", std::to_string(after.resident - before.resident));
  RecordProperty("virtual_growth_bytes", std::to_string(after.virtual_size - before.virtual_size));
  RecordProperty("reserved_bytes", std::to_string(held.reserved_bytes.current));
  std::printf("stream per request, %d requests: resident %+lld KiB, virtual %+lld KiB, reserved %lld KiB, "
              "%lld segments\n",
              requests, static_cast<long long>(after.resident - before.resident) / 1024,
              static_cast<long long>(after.virtual_size - before.virtual_size) / 1024,
              static_cast<long long>(held.reserved_bytes.current) / 1024,
              static_cast<long long>(held.segment.current));
  EXPECT_LE(held.reserved_bytes.current, static_cast<std::int64_t>(gib));
  if (!sanitized) {
    EXPECT_LE(after.resident, before.resident + 64 * mib);
    EXPECT_LE(after.virtual_size, before.virtual_size + gib);
  }
  Stream last(device, stream_options{.name = "large"});
  void* large = alloc.allocate(device_bytes / 2, last);
  EXPECT_NE(large, nullptr);
  alloc.deallocate(large);
}

}  // namespace
}  // namespace streamsafe
