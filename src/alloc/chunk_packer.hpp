// The physical chunks behind one stream's stitched segments, shared out at byte granularity.
//
// A stitched segment lives in a window: whole chunks mapped at consecutive addresses, of which
// the segment uses bytes [begin, granularity) of the first chunk, all of the middle ones and
// [0, end) of the last. The window's first chunk is placed so that the segment starts `begin`
// bytes into it. The bytes of a chunk that no segment uses can serve another window, which maps
// the same chunk at another address (the two alias). So free bytes inside a chunk are never
// stranded by virtual addresses: a large segment can start in the free end of any chunk and
// finish in the free start of any other, and only what no request fits stays unused.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "alloc/memory_source.hpp"
#include "alloc/stitched_window.hpp"

namespace streamsafe::detail {

/// Not thread-safe: the owning stream pool's lock guards it.
class chunk_packer {
 public:
  explicit chunk_packer(std::size_t granularity) : granularity_(granularity) {}
  chunk_packer(const chunk_packer&) = delete;  // chunks point into its lists
  chunk_packer& operator=(const chunk_packer&) = delete;

  /// Where a segment would go: its pieces in address order. A fresh piece is in a chunk that does
  /// not exist yet (its `chunk` is meaningless until take).
  struct planned_piece {
    chunk_piece piece;
    bool fresh = false;
  };
  struct plan {
    std::vector<planned_piece> pieces;
    std::size_t fresh_chunks = 0;
  };
  /// A segment of exactly `bytes` (a multiple of 512): it starts in the free end of a chunk
  /// (or on a chunk start), takes whole free chunks, and ends in the free start of another
  /// chunk. Of the ways to do so, the one needing the fewest new chunks, then the one using the
  /// longest free end, then the one leaving the fewest bytes of the chosen free start.
  [[nodiscard]] plan plan_segment(std::size_t bytes) const;
  /// A segment for the small pool's requests, of at least `bytes` (at most one chunk): the
  /// smallest free range of a partly used chunk that holds `bytes`, cut to `window_bytes` when
  /// larger (next to the range's used neighbour, so its free end or start stays one), else a
  /// free or new chunk cut the same way. `window_bytes` 0 takes the whole range.
  [[nodiscard]] plan plan_small_segment(std::size_t bytes, std::size_t window_bytes) const;
  /// Takes the plan's bytes; `fresh` holds the new chunks' handles in plan order. The pieces,
  /// with their chunk indices.
  std::vector<chunk_piece> take(const plan& planned, std::span<const physical_handle> fresh);
  /// Takes the bytes of `pieces` (all free: see is_free).
  void take(std::span<const chunk_piece> pieces);
  [[nodiscard]] bool is_free(const chunk_piece& piece) const;
  /// The bytes of `pieces` are free again.
  void give_back(std::span<const chunk_piece> pieces);
  /// Forgets the wholly free chunks; their handles, for the caller to release.
  [[nodiscard]] std::vector<physical_handle> remove_wholly_free();
  /// Forgets wholly free chunk `chunk`; its handle.
  [[nodiscard]] physical_handle remove_chunk(std::size_t chunk);
  /// Forgets every chunk, free or not; their handles.
  [[nodiscard]] std::vector<physical_handle> remove_all();

  [[nodiscard]] physical_handle handle(std::size_t chunk) const { return chunks_[chunk].handle; }
  /// Whether `chunk` is held and has no byte in use: any such chunk serves a plan's piece in one
  /// as well as another.
  [[nodiscard]] bool is_wholly_free(std::size_t chunk) const noexcept {
    return chunk < chunks_.size() && chunks_[chunk].held && wholly_free(chunks_[chunk]);
  }
  [[nodiscard]] std::size_t chunks_held() const noexcept { return held_; }
  [[nodiscard]] std::size_t wholly_free_chunks() const noexcept { return wholly_free_.size(); }
  [[nodiscard]] std::size_t free_bytes() const noexcept;  // in every chunk held
  [[nodiscard]] std::size_t granularity() const noexcept { return granularity_; }

 private:
  struct range {
    std::size_t begin;
    std::size_t end;
  };
  struct chunk {
    physical_handle handle = 0;
    std::vector<range> free;  // in address order, never touching
    bool held = false;
    std::vector<std::size_t>* list = nullptr;  // wholly_free_, partial_ or none (wholly used)
    std::size_t slot = 0;                      // its index there
  };

  [[nodiscard]] std::size_t free_end(const chunk& c) const noexcept;    // bytes free up to the chunk's end
  [[nodiscard]] std::size_t free_start(const chunk& c) const noexcept;  // bytes free from the chunk's start
  [[nodiscard]] bool wholly_free(const chunk& c) const noexcept;
  /// A piece of `bytes` inside free range `r` of a chunk, next to its used neighbour.
  [[nodiscard]] chunk_piece cut(std::size_t chunk, range r, std::size_t bytes) const noexcept;
  std::size_t add(physical_handle handle);
  void take_bytes(const chunk_piece& piece);
  void classify(std::size_t index);  // files the chunk as wholly free, partly used, or neither
  void unlist(std::size_t index) noexcept;
  void check(const chunk_piece& piece) const;  // throws usage_error unless it lies in a held chunk
  physical_handle forget(std::size_t index);     // removes a held chunk, free or not

  std::size_t granularity_;
  std::vector<chunk> chunks_;
  std::vector<std::size_t> unused_slots_;  // indices of chunks removed, for reuse
  std::vector<std::size_t> wholly_free_;
  std::vector<std::size_t> partial_;
  std::size_t held_ = 0;
};

}  // namespace streamsafe::detail
