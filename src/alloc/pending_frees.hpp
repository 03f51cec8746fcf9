// Blocks freed by the host while other streams may still use them (record_stream, or a borrowed
// block going home), held until those streams' work enqueued before the free has completed.
//
// Completion is tracked with fences: one pooled event per stream covers every free on that
// stream since the previous fence. A free joins its stream's open fence, which is recorded once
// it holds `batch_frees` frees or `batch_bytes` bytes, or after `batch_frees` lazy polls (the
// allocations that poll), or at once by an eager poll. An event recorded after the free
// covers everything enqueued before it, so sharing is safe; it may cover more work, which only
// delays the reclaim. Fences on one stream complete in order, so a poll queries only the oldest,
// and backs off (in polls) while it is not ready: the record and the query, the two CUDA calls
// of this path, are paid once per batch instead of once per free.
//
// Locking: one std::mutex, never a spin lock. Event records and queries (CUDA calls that do not
// wait for the device) run under it; the waits of drain never do. A stream is kept (a share)
// while it has fences open or in flight, and dropped outside the lock once it has none.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
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
  /// From allocations: skips streams in back-off, records an open fence once it has waited
  /// as many polls as a batch has frees.
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

  /// Holds `freed` until every stream in `streams` has finished the work enqueued so far; takes
  /// the shares (the streams stay until then). Does not throw for a failed event record: the
  /// fence stays open, its frees held, and the next poll or drain records it.
  void hold(block* freed, stream_pool* user, std::span<std::shared_ptr<StreamImpl>> streams);
  /// Moves the blocks whose fences completed to `done`, without blocking. Returns at once when
  /// another thread is polling. A failed record or query is rethrown after every stream was
  /// polled; `done` then still holds what completed, for the caller to reclaim.
  void poll(poll_mode mode, std::vector<finished_free>& done);
  /// Records every open fence, waits for all fences (without the lock: frees and polls go on),
  /// and moves every block held when it was called to `done`, except those of a fence whose
  /// record failed: they stay held, and the first such failure is rethrown after the wait (a
  /// failed wait is rethrown at once). Either way `done` holds what completed.
  void drain(std::vector<finished_free>& done);
  /// Blocks held; read without the lock, so a hint for the fast path.
  [[nodiscard]] std::size_t held() const noexcept { return held_count_.load(std::memory_order_relaxed); }

  struct totals {
    std::size_t blocks = 0;
    std::size_t bytes = 0;
    std::uint64_t fences_recorded = 0;  // over the allocator's life: the CUDA event records
  };
  [[nodiscard]] totals held_totals() const;

 private:
  struct fence {
    PooledEvent event;
    std::vector<std::uint32_t> holders;  // indices into entries_
  };
  struct stream_fences {
    std::shared_ptr<StreamImpl> stream;
    std::vector<std::uint32_t> open;  // holders of the fence not recorded yet
    std::size_t open_bytes = 0;
    std::size_t open_polls = 0;  // lazy polls since the open fence got its first free
    std::deque<fence> in_flight;  // recorded, oldest first
    unsigned polls_to_skip = 0;
    unsigned backoff = 0;
  };
  struct entry {
    block* freed = nullptr;
    stream_pool* user = nullptr;
    unsigned fences_left = 0;
  };
  /// A fence drain waits for, out of its stream's list.
  struct taken_fence {
    std::shared_ptr<StreamImpl> stream;
    fence taken;
  };
  using stream_shares = std::vector<std::shared_ptr<StreamImpl>>;
  static constexpr unsigned max_backoff_polls = 64;

  [[nodiscard]] stream_fences& fences_of(std::shared_ptr<StreamImpl>& stream);
  [[nodiscard]] std::uint32_t new_entry(block* freed, stream_pool* user, unsigned fences);
  void record_open(stream_fences& s);
  /// record_open; the failure, or null. A fence that fails stays open with its holders.
  [[nodiscard]] std::exception_ptr try_record_open(stream_fences& s) noexcept;
  void complete(const fence& f, std::vector<finished_free>& done);
  void query(stream_fences& s, poll_mode mode, std::vector<finished_free>& done);
  /// After a failed wait in drain: completes the first `waited` fences, returns the rest.
  void give_back_unwaited(std::vector<taken_fence>& waiting, std::size_t waited, std::vector<finished_free>& done);
  /// Moves the shares of streams with no fence left to `dropped` (released after the lock).
  void forget_idle_streams(stream_shares& dropped);
  void count_held(const block& b, bool added) noexcept;

  EventPool& events_;
  fence_policy policy_;
  mutable std::mutex mutex_;
  std::deque<stream_fences> streams_;  // the streams with fences open or in flight
  std::vector<entry> entries_;
  std::vector<std::uint32_t> spare_entries_;
  totals totals_;                          // guarded by mutex_
  std::atomic<std::size_t> held_count_{0};  // totals_.blocks, stored for the lock-free hint
};

}  // namespace streamsafe::detail
