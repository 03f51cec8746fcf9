// Blocks freed by the host while other streams may still use them (record_stream, or a borrowed
// block going home), held until those streams' work enqueued before the free has completed.
//
// Completion is tracked with fences: one pooled event per stream covers every free on that
// stream since the previous fence. A free on a stream with no fence in flight records one at
// once (so a lone free behaves as if it had its own event); later frees join the stream's open
// fence, which is recorded when the fence in flight completes or when it holds
// `fence_batch_frees` frees or `fence_batch_bytes` bytes. An event recorded after the free
// covers everything enqueued before it, so sharing is safe; it may cover more work, which only
// delays the reclaim. Fences on one stream complete in order, so a poll queries only the oldest,
// and backs off (in polls) while it is not ready: the record and the query, the two CUDA calls
// of this path, are paid once per batch instead of once per free.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "alloc/block.hpp"
#include "streamsafe/event_pool.hpp"

namespace streamsafe::detail {

class StreamImpl;
class stream_pool;

/// A block whose streams have finished with it: the caller returns it to its owner's cache.
struct finished_free {
  block* freed = nullptr;
  stream_pool* user = nullptr;
};

struct fence_policy {
  std::size_t batch_frees = 32;
  std::size_t batch_bytes = std::size_t{64} << 20;
};

enum class poll_mode {
  /// From allocations: skips streams in back-off, records open fences only once the stream has
  /// none in flight.
  lazy,
  /// From process_pending_frees() and the OOM ladder: records every open fence and queries every
  /// stream's oldest fence now.
  eager,
};

class pending_frees {
 public:
  pending_frees(EventPool& events, fence_policy policy) : events_(events), policy_(policy) {}
  ~pending_frees();
  pending_frees(const pending_frees&) = delete;
  pending_frees& operator=(const pending_frees&) = delete;

  /// Holds `freed` until every stream in `streams` has finished the work enqueued so far.
  void hold(block* freed, stream_pool* user, std::span<StreamImpl* const> streams);
  /// Moves the blocks whose fences completed to `done`, without blocking. Returns at once when
  /// another thread is polling.
  void poll(poll_mode mode, std::vector<finished_free>& done);
  /// Records every open fence, waits for all fences, and moves every held block to `done`.
  void drain(std::vector<finished_free>& done);
  /// Blocks held; read without the lock, so a hint for the fast path.
  [[nodiscard]] std::size_t held() const noexcept { return held_count_.load(std::memory_order_relaxed); }
  /// Fence events recorded over the allocator's life (the number of CUDA event records).
  [[nodiscard]] std::uint64_t fences_recorded() const noexcept;

 private:
  struct fence {
    PooledEvent event;
    std::vector<std::uint32_t> holders;  // indices into entries_
  };
  struct stream_fences {
    StreamImpl* stream = nullptr;
    std::vector<std::uint32_t> open;  // holders of the fence not recorded yet
    std::size_t open_bytes = 0;
    std::deque<fence> in_flight;  // recorded, oldest first
    unsigned polls_to_skip = 0;
    unsigned backoff = 0;
  };
  struct entry {
    block* freed = nullptr;
    stream_pool* user = nullptr;
    unsigned fences_left = 0;
  };
  static constexpr unsigned max_backoff_polls = 64;

  [[nodiscard]] stream_fences& fences_of(StreamImpl* stream);
  [[nodiscard]] std::uint32_t new_entry(block* freed, stream_pool* user, unsigned fences);
  void record_open(stream_fences& s);
  void complete_oldest(stream_fences& s, std::vector<finished_free>& done);
  void query(stream_fences& s, poll_mode mode, std::vector<finished_free>& done);

  EventPool& events_;
  fence_policy policy_;
  std::mutex mutex_;
  std::deque<stream_fences> streams_;  // few: the streams ever recorded
  std::vector<entry> entries_;
  std::vector<std::uint32_t> spare_entries_;
  std::atomic<std::size_t> held_count_{0};
  std::atomic<std::uint64_t> fences_recorded_{0};
};

}  // namespace streamsafe::detail
