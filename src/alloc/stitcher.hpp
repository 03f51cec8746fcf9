// One stream's stitched memory (allocator_options: expandable_growth::stitch): the physical
// chunks (chunk_packer), the virtual windows that map them (window_space), and the mappings of
// dissolved segments.
//
// A mapping depends only on which chunks sit in which slots, not on which of their bytes a
// segment uses. So a dissolved segment's mapping stays, dormant: a later segment whose plan
// needs the same chunks in the same order takes it over without mapping anything, and a plan's
// wholly free chunks, which are interchangeable, are chosen to make that happen (on the inference
// traces, 10k chunks mapped instead of 150k; a new accessible mapping costs 33-45 us per chunk on
// an H200). Dormant mappings past a limit are retired: unmapped once the
// work enqueued before is done (an event says when).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

#include "alloc/chunk_packer.hpp"
#include "alloc/memory_source.hpp"
#include "alloc/stitched_window.hpp"
#include "alloc/window_space.hpp"
#include "streamsafe/event_pool.hpp"

namespace streamsafe::detail {

/// Not thread-safe: the owning stream pool's lock guards it.
class stitcher {
 public:
  stitcher(memory_source& source, std::size_t granularity, std::size_t reserve_bytes)
      : source_(source), packer_(granularity), windows_(source, granularity, reserve_bytes) {}
  /// Unmaps every mapping and releases every chunk: the device must be idle.
  ~stitcher();
  stitcher(const stitcher&) = delete;
  stitcher& operator=(const stitcher&) = delete;

  /// Takes the bytes of a planned segment (chunk_packer::plan_segment or plan_small_segment) in
  /// a dormant mapping of the same chunks, else in a new one, creating the plan's new chunks.
  /// Throws out_of_memory, with nothing changed, when the device cannot give them.
  [[nodiscard]] stitched_window stitch(const chunk_packer::plan& planned);
  /// The segment's bytes are free for other segments at once (the stream that used them orders
  /// the next use after this one); its mapping becomes dormant.
  void dissolve(stitched_window window);
  [[nodiscard]] bool dormant_over(std::size_t keep) const noexcept { return dormant_.size() > keep; }
  /// Retires the oldest dormant mappings beyond `keep`: they are unmapped once `done`,
  /// recorded on the stream after their segments' last use, completes.
  void retire(std::size_t keep, PooledEvent done);
  /// Unmaps the retired mappings whose work is done; when `idle` (the stream was synchronized),
  /// every mapping but live segments'.
  void unmap_finished(bool idle);
  /// Releases the wholly free chunks (after unmap_finished(true): no mapping keeps them); how many.
  std::size_t release_free_chunks();

  [[nodiscard]] const chunk_packer& packer() const noexcept { return packer_; }

 private:
  using dormant_list = std::list<chunk_mapping>;
  using dormant_match = std::pair<dormant_list::iterator, std::size_t>;  // a mapping, the plan's first slot
  struct retired_batch {
    PooledEvent done;
    std::vector<chunk_mapping> mappings;
  };
  /// A dormant mapping holding `chunks` in consecutive slots, and the slot where they start;
  /// {end, 0} when there is none.
  [[nodiscard]] dormant_match find_dormant(const std::vector<std::size_t>& chunks);
  [[nodiscard]] chunk_mapping map_new(const std::vector<std::size_t>& chunks);
  /// Swaps the plan's wholly free chunks (any serves as well as another) for the ones a dormant
  /// mapping holds around the plan's other chunks; that mapping and the plan's first slot in it,
  /// {end, 0} when no mapping fits.
  [[nodiscard]] dormant_match align_to_dormant(chunk_packer::plan& planned);
  [[nodiscard]] chunk_mapping take_dormant(dormant_list::iterator it);  // out of the dormant set
  /// Unmaps the first `mapped` of `slots` slots at `base`, then gives all their addresses back.
  void unmap(std::uintptr_t base, std::size_t mapped, std::size_t slots);

  memory_source& source_;
  chunk_packer packer_;
  window_space windows_;
  std::unordered_map<std::uintptr_t, std::size_t> live_;  // mappings of live segments: base -> slots
  dormant_list dormant_;                                  // oldest first
  std::unordered_multimap<std::size_t, dormant_list::iterator> dormant_by_chunk_;
  std::vector<retired_batch> retired_;
};

}  // namespace streamsafe::detail
