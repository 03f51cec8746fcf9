// The device memory of the stream pools: segments adopted into a pool (and the owners' map, where
// frees from other threads find them) and disowned; free memory taken out of a pool's books under
// its mutex and given back to the device after it. The out-of-memory ladder, remap growth and the
// undoing of a failed growth give memory back through it.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include "alloc/mapping_reports.hpp"
#include "alloc/allocation_history.hpp"
#include "alloc/allocator_books.hpp"
#include "alloc/block.hpp"
#include "alloc/counting_memory_source.hpp"
#include "alloc/released_memory.hpp"
#include "alloc/segment_owners.hpp"
#include "alloc/stream_pool.hpp"
#include "streamsafe/event_pool.hpp"

namespace streamsafe::detail {

/// Thread safety: as the pool locks named at each member; the books, history and owners' map it
/// tells are thread-safe. The source, books, history and owners must outlive it.
class pool_memory {
 public:
  pool_memory(counting_memory_source& source, allocator_books& books, allocation_history& history,
              segment_owners& owners, mapping_reports& mappings) noexcept
      : source_(source), books_(books), history_(history), owners_(owners), mappings_(mappings) {}

  /// A new segment into the pool and the owners' map; and back out. Caller holds pool.mutex.
  void adopt(stream_pool& pool, segment* s);
  void disown(stream_pool& pool, segment* s);

  /// Takes the pool's wholly free fixed segments and the free chunks of its
  /// expandable ones out of its books. Caller holds pool.growth and pool.mutex.
  void take_free_memory(stream_pool& pool, released_memory& out);
  /// Takes every segment of an unused pool out of its books; false, taking nothing, when one is
  /// not wholly free. Caller holds pool.growth and pool.mutex.
  [[nodiscard]] bool take_all_memory(stream_pool& pool, released_memory& out);
  /// Marks up to `limit` free mapped chunks of `s` unmapped and lists them; how many. Caller
  /// holds the pool's mutex.
  static std::size_t take_free_chunks(segment& s, released_memory& out, std::size_t limit);

  /// Gives taken memory back to the device, after synchronizing the stream when `synchronize`
  /// (the memory's last use may still be queued on it); a chunk or segment whose release fails
  /// goes back into the books as the device still holds it, then the first error is rethrown.
  /// Caller holds pool.growth, not pool.mutex.
  void give_back(stream_pool& pool, released_memory& taken, bool synchronize);
  /// Puts memory taken and not given back into the pool's books again, as it was. Caller holds
  /// pool.growth, not pool.mutex.
  void put_back(stream_pool& pool, released_memory& taken) { restore_books(pool, taken, progress{}); }

  /// Gives taken memory back to the device once the work queued on the pool's stream now is
  /// done, never waiting for it: at once when it is already done, else from a later
  /// finish_releases. Until then the memory stays out of the books (no request takes it) and
  /// reserved keeps counting it. When no event can be recorded, the stream is synchronized
  /// instead. Caller holds pool.growth, not pool.mutex, and cancelled the pool's earlier waiting
  /// release (cancel_release) before taking its memory.
  void give_back_when_done(stream_pool& pool, released_memory& taken, EventPool& events);
  /// Gives back what give_back_when_done left waiting, for each pool whose work is done by now
  /// and whose slow path no other thread holds; never waits. Whether some is still waiting. A
  /// device call that fails leaves that memory in its pool's books, as give_back does.
  bool finish_releases() noexcept;
  /// Puts what give_back_when_done left waiting for `pool` back into its books, still mapped:
  /// the pool needs memory again (growing would map new chunks beside chunks about to go), or
  /// all of it is released, retired or destroyed now. Caller holds pool.growth, not pool.mutex.
  void cancel_release(stream_pool& pool);

 private:
  /// How many chunks of `taken`, from its `first`, lie side by side in one segment: one unmap.
  [[nodiscard]] static std::size_t adjacent_run(const released_memory& taken, std::size_t first);
  struct progress {  // how many of the chunks and segments the device took back
    std::size_t chunks = 0;
    std::size_t segments = 0;
  };
  void book_given_back(stream_pool& pool, const released_memory& taken, const progress& done);
  void restore_books(stream_pool& pool, released_memory& taken, const progress& done);

  counting_memory_source& source_;
  allocator_books& books_;
  allocation_history& history_;
  segment_owners& owners_;
  mapping_reports& mappings_;

  struct waiting_release {
    stream_pool* pool = nullptr;
    released_memory taken;
    PooledEvent done;  // recorded on the pool's stream once the memory was out of the books
  };
  // Taken under a pool's growth mutex; finish_releases takes growth mutexes under it only with
  // try_lock.
  std::mutex waiting_mutex_;
  std::vector<waiting_release> waiting_;  // one at most per pool
  std::atomic<std::size_t> waiting_count_{0};  // waiting_.size(), read without the lock
};

}  // namespace streamsafe::detail
