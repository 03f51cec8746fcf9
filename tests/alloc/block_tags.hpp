// Device work for the soak and the stress tests (sim only): each block carries its own tag,
// written by a kernel on its allocation stream when it is handed out and checked by kernels on
// the streams that use it, the last one just before its free. Tags sit at the block's start,
// end and every 64 KiB between (a piece is never shorter than 512 bytes, and segments change
// pieces at chunk boundaries, which these offsets cross), so a block reused or unmapped while
// its work is queued, or a chunk mapped wrongly, shows as another block's tag.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "streamsafe/kernel.hpp"

namespace streamsafe::testing {

/// The tags checks found wrong; kernels on any stream report here. Thread-safe.
class tag_failures {
 public:
  void note(const void* block, std::size_t offset, std::uint64_t seen, std::uint64_t expected);
  [[nodiscard]] std::uint64_t count() const noexcept { return count_.load(); }
  /// The first failure, described.
  [[nodiscard]] std::string first() const;

 private:
  std::atomic<std::uint64_t> count_{0};
  mutable std::mutex mutex_;
  std::string first_;
};

struct tagged_block {
  void* ptr = nullptr;
  std::size_t rounded = 0;  ///< the block's size as the allocator rounded it
  std::uint64_t tag = 0;
};

/// A kernel writing the block's tag (sim only).
[[nodiscard]] kernel write_tags(const tagged_block& block);
/// A kernel checking the block's tag, reporting to `failures`, which must outlive it (sim only).
[[nodiscard]] kernel check_tags(const tagged_block& block, tag_failures& failures);

}  // namespace streamsafe::testing
