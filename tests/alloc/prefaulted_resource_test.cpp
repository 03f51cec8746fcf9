// The memory the switch to a plan is built in: prepared pages serve allocations in turn, the
// heap serves the rest, and pages still in use are never given back under their user.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <vector>

#include "common/prefaulted_resource.hpp"

namespace streamsafe::detail {
namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

TEST(PrefaultedResource, PreparedPagesServeAllocationsInTurnThenTheHeapDoes) {
  prefaulted_resource memory;
  EXPECT_EQ(memory.prepared(), 0u);
  memory.prepare(3 * mib);
  ASSERT_GE(memory.prepared(), 3 * mib);  // rounded up to whole huge-page-sized steps
  const std::size_t prepared = memory.prepared();
  auto* first = static_cast<char*>(memory.allocate(mib, 64));
  auto* second = static_cast<char*>(memory.allocate(mib, 64));
  EXPECT_EQ(second, first + mib);
  // Past the prepared bytes: the heap, and still usable memory.
  auto* beyond = static_cast<char*>(memory.allocate(prepared, 64));
  EXPECT_TRUE(beyond < first || beyond >= first + prepared);
  std::fill(beyond, beyond + prepared, std::uint8_t{0x5a});
  std::fill(first, first + 2 * mib, std::uint8_t{0xa5});
  memory.deallocate(beyond, prepared, 64);
  memory.deallocate(second, mib, 64);
  memory.deallocate(first, mib, 64);
}

TEST(PrefaultedResource, PagesServeFromTheirBeginningAgainOnceNothingTakenIsInUse) {
  prefaulted_resource memory;
  memory.prepare(2 * mib);
  auto* first = static_cast<char*>(memory.allocate(mib, 64));
  auto* second = static_cast<char*>(memory.allocate(mib / 2, 64));
  memory.deallocate(first, mib, 64);
  auto* third = static_cast<char*>(memory.allocate(mib / 2, 64));
  EXPECT_GE(third, second + mib / 2) << "the second is still in use: nothing is served over it";
  std::fill(second, second + mib / 2, std::uint8_t{0x11});
  std::fill(third, third + mib / 2, std::uint8_t{0x22});
  EXPECT_EQ(second[mib / 2 - 1], 0x11);
  memory.deallocate(third, mib / 2, 64);
  memory.deallocate(second, mib / 2, 64);
  auto* again = static_cast<char*>(memory.allocate(mib, 64));
  EXPECT_EQ(again, first) << "all given back: the pages serve from their beginning";
  memory.deallocate(again, mib, 64);
}

TEST(PrefaultedResource, AlignmentIsKeptInsideThePreparedPages) {
  prefaulted_resource memory;
  memory.prepare(mib);
  void* odd = memory.allocate(24, 8);
  void* line = memory.allocate(128, 64);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(line) % 64, 0u);
  memory.deallocate(line, 128, 64);
  memory.deallocate(odd, 24, 8);
}

TEST(PrefaultedResource, PagesInUseOutliveAReleaseAndASecondPrepare) {
  prefaulted_resource memory;
  memory.prepare(2 * mib);
  // A pmr vector keeps its storage there, as the plan's blocks do for the plan's life.
  std::pmr::vector<std::uint64_t> held(mib / sizeof(std::uint64_t), 0, &memory);
  for (std::size_t i = 0; i < held.size(); ++i) held[i] = i * 2654435761u;
  memory.release();
  EXPECT_EQ(memory.prepared(), 0u);
  memory.prepare(2 * mib);  // a later period's switch
  std::pmr::vector<std::uint64_t> later(mib / sizeof(std::uint64_t), ~std::uint64_t{0}, &memory);
  memory.release();
  // Unmapped under it, the vector would fault here (or read another mapping's bytes).
  for (std::size_t i = 0; i < held.size(); ++i) ASSERT_EQ(held[i], i * 2654435761u) << "at " << i;
  EXPECT_TRUE(std::all_of(later.begin(), later.end(), [](std::uint64_t v) { return v == ~std::uint64_t{0}; }));
}

TEST(PrefaultedResource, ARetiredRegionStaysWhileAnyOfItsAllocationsIsInUse) {
  prefaulted_resource memory;
  memory.prepare(2 * mib);
  auto* first = static_cast<std::uint8_t*>(memory.allocate(mib / 4, 64));
  auto* second = static_cast<std::uint8_t*>(memory.allocate(mib / 4, 64));
  std::fill(second, second + mib / 4, std::uint8_t{0x3c});
  memory.release();
  memory.deallocate(first, mib / 4, 64);
  // Given back with the first allocation, the pages would take the second one with them.
  EXPECT_TRUE(std::all_of(second, second + mib / 4, [](std::uint8_t b) { return b == 0x3c; }));
  memory.deallocate(second, mib / 4, 64);
}

TEST(PrefaultedResource, AZeroByteAllocationAfterAnExactFillIsServedAndGivenBack) {
  prefaulted_resource memory;
  memory.prepare(2 * mib);
  const std::size_t all = memory.prepared();
  void* whole = memory.allocate(all, 64);
  void* none = memory.allocate(0, 8);
  memory.deallocate(none, 0, 8);  // the heap's, not one past the pages' end
  memory.deallocate(whole, all, 64);
}

TEST(PrefaultedResource, TheHeapItFallsBackOnIsOperatorNewWhateverTheDefaultResource) {
  prefaulted_resource memory;
  memory.prepare(2 * mib);
  std::pmr::memory_resource* const before = std::pmr::set_default_resource(std::pmr::null_memory_resource());
  void* beyond = nullptr;
  EXPECT_NO_THROW(beyond = memory.allocate(4 * mib, 64));
  std::pmr::set_default_resource(before);
  ASSERT_NE(beyond, nullptr);
  memory.deallocate(beyond, 4 * mib, 64);
}

TEST(PrefaultedResource, UnpreparedItIsTheHeap) {
  prefaulted_resource memory;
  std::pmr::vector<int> v(&memory);
  for (int i = 0; i < 100000; ++i) v.push_back(i);
  EXPECT_EQ(v.back(), 99999);
  memory.prepare(0);
  EXPECT_EQ(memory.prepared(), 0u);
}

}  // namespace
}  // namespace streamsafe::detail
