// A check that memory is never reused while device work may still use it. The block's old user
// keeps work queued on a stream that is behind (starved on sim, a kernel that spins first on
// cuda) at the moment the allocator could reuse, unmap or release the block; the new owner then
// writes its own data; once the device is idle, the new owner must still hold its data and every
// old read must have seen the old data. An allocator that reuses early fails one of the two:
// the late write lands over the new owner's data, or the late read sees it (on sim, a chunk
// unmapped early faults instead).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "streamsafe/device.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::testing {

/// Not thread-safe. Blocks are named by their first byte; sizes are multiples of 4 bytes.
class reuse_oracle {
 public:
  explicit reuse_oracle(Device device) : device_(std::move(device)) {}
  ~reuse_oracle();
  reuse_oracle(const reuse_oracle&) = delete;
  reuse_oracle& operator=(const reuse_oracle&) = delete;

  /// The old user's last write, queued on `late`: `value` in every word of the block.
  void late_write(StreamRef late, void* block, std::size_t bytes, std::uint32_t value);
  /// The old user's last read, queued on `late`: the words it sees are kept, and settle()
  /// requires each to be `expected` (what the block held for its old user).
  void late_read(StreamRef late, const void* block, std::size_t bytes, std::uint32_t expected);
  /// The new owner's first use, on `stream`: `value` in every word. settle() requires the block
  /// to still hold it, so the block must stay live until then.
  void claim(StreamRef stream, void* block, std::size_t bytes, std::uint32_t value);
  /// A block's contents written on `stream`, with no expectation of its own (the data a late
  /// read expects, or an owner's own work).
  static void write(StreamRef stream, void* block, std::size_t bytes, std::uint32_t value);

  /// Synchronizes the device, then checks every claim and every late read since the last settle.
  [[nodiscard]] ::testing::AssertionResult settle();

 private:
  struct expectation {
    StreamRef stream;
    const std::uint32_t* words;
    std::size_t count;
    std::uint32_t value;
    std::string what;
  };
  [[nodiscard]] static std::string describe(const expectation& e, std::size_t at, std::uint32_t seen);

  Device device_;
  std::vector<expectation> claims_;
  std::vector<expectation> reads_;
  std::vector<std::uint32_t*> copies_;  // pinned: where late reads put what they saw
};

}  // namespace streamsafe::testing
