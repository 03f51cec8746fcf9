// The memory source's chunks as the driver keeps them: a handle released as soon as it is mapped
// keeps its memory until the unmap, and one unmap over a run of adjacent chunks gives back those
// chunks and no others. On every backend: sim models the driver's rules, the cuda variant checks
// them on a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "alloc/memory_source.hpp"
#include "alloc/sim_faults.hpp"
#include "backends.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe {
namespace {

using testing::fill_kernel;
using testing::read_back;

class MemorySource : public testing::BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped()) return;
    source_ = detail::make_memory_source(device());
    free_at_start_ = device().memory().free_bytes;
    chunk_ = std::size_t{2} << 20;
    base_ = source_->reserve(chunks * chunk_);
    for (std::size_t i = 0; i < chunks; ++i) source_->map_chunk(at(i), chunk_);
  }
  void TearDown() override {
    if (source_ == nullptr) return;
    source_->release(base_, chunks * chunk_);
    // Every chunk known to the source went back: none was forgotten while still mapped.
    if (GetParam() != testing::test_backend::cuda) EXPECT_EQ(device().memory().free_bytes, free_at_start_);
  }
  [[nodiscard]] std::uintptr_t at(std::size_t chunk) const { return base_ + chunk * chunk_; }
  [[nodiscard]] std::uint32_t* words(std::size_t chunk) const { return reinterpret_cast<std::uint32_t*>(at(chunk)); }
  [[nodiscard]] std::size_t words_per_chunk() const { return chunk_ / sizeof(std::uint32_t); }
  /// Whether every word of `chunk` reads `value`.
  bool holds(Stream& stream, std::size_t chunk, std::uint32_t value) {
    for (const std::uint32_t w : read_back(stream, words(chunk), words_per_chunk())) {
      if (w != value) return false;
    }
    return true;
  }

  static constexpr std::size_t chunks = 4;
  std::unique_ptr<detail::memory_source> source_;
  std::size_t chunk_ = 0;
  std::uintptr_t base_ = 0;
  std::size_t free_at_start_ = 0;
};

TEST_P(MemorySource, ChunksReleasedWhenMappedHoldTheirBytesUntilTheirUnmap) {
  Stream stream(device());
  for (std::size_t i = 0; i < chunks; ++i) stream.launch(fill_kernel(words(i), words_per_chunk(), 100 + i));
  stream.synchronize();
  for (std::size_t i = 0; i < chunks; ++i) EXPECT_TRUE(holds(stream, i, 100 + i)) << "chunk " << i;
}

TEST_P(MemorySource, OneUnmapGivesBackARunOfAdjacentChunksAndLeavesTheOthers) {
  Stream stream(device());
  for (std::size_t i = 0; i < chunks; ++i) stream.launch(fill_kernel(words(i), words_per_chunk(), 7 + i));
  stream.synchronize();
  const std::size_t free_before = device().memory().free_bytes;
  source_->unmap_chunks(at(1), 2, chunk_);
  // The run's memory went with the unmap (its handles were released when mapped).
  EXPECT_GE(device().memory().free_bytes, free_before + 2 * chunk_);
  EXPECT_TRUE(holds(stream, 0, 7));
  EXPECT_TRUE(holds(stream, 3, 10));
  source_->map_chunk(at(1), chunk_);  // the freed range takes a chunk again
  stream.launch(fill_kernel(words(1), words_per_chunk(), 42));
  stream.synchronize();
  EXPECT_TRUE(holds(stream, 1, 42));
  EXPECT_TRUE(holds(stream, 0, 7));
  source_->map_chunk(at(2), chunk_);
}

TEST_P(MemorySource, AnUnmapOfChunksItDidNotMapIsRefusedAndLosesNothing) {
  Stream stream(device());
  stream.launch(fill_kernel(words(0), words_per_chunk(), 5));
  stream.synchronize();
  source_->unmap_chunks(at(1), 1, chunk_);
  EXPECT_THROW(source_->unmap_chunks(at(0), 2, chunk_), usage_error);  // chunk 1 is not mapped any more
  EXPECT_TRUE(holds(stream, 0, 5));
  EXPECT_THROW(source_->map_chunk(at(0), chunk_), usage_error);  // mapped already
  EXPECT_TRUE(holds(stream, 0, 5));
  EXPECT_NO_THROW(source_->unmap_chunks(at(0), 1, chunk_)) << "the refusals left chunk 0 mapped and known";
  source_->map_chunk(at(0), chunk_);
  source_->map_chunk(at(1), chunk_);
}

TEST_P(MemorySource, AMapWhoseReleaseFailsGivesTheChunkBack) {
  if (GetParam() == testing::test_backend::cuda) GTEST_SKIP() << "the fault is injected on sim";
  source_->unmap_chunks(at(1), 1, chunk_);
  const std::size_t free_before = device().memory().free_bytes;
  detail::sim_faults().releases.arm(0, 1);
  EXPECT_THROW(source_->map_chunk(at(1), chunk_), cuda_error);
  detail::sim_faults().releases.arm(0, 0);
  EXPECT_EQ(device().memory().free_bytes, free_before) << "the chunk's memory went back";
  EXPECT_THROW(source_->unmap_chunks(at(1), 1, chunk_), usage_error) << "not left known as mapped";
  source_->map_chunk(at(1), chunk_);  // the address maps again
}

STREAMSAFE_ALL_BACKENDS(MemorySource);

}  // namespace
}  // namespace streamsafe
