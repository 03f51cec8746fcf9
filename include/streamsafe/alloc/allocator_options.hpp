// Configuration of the caching allocator: a C++ struct, and the STREAMSAFE_ALLOC_CONF string
// that fills it (every key is documented in docs/allocator.md).
#pragma once

#include <cstddef>
#include <string_view>

namespace streamsafe {

class allocator_observer;

/// How the allocator gets memory from the device.
enum class segment_kind {
  /// Whole segments from Device::allocate (cudaMalloc); free space cannot span two segments.
  fixed,
  /// Virtual ranges per stream and pool (see expandable_reserve_bytes), physical memory mapped in `granularity` chunks
  /// (cuMemAddressReserve/cuMemCreate/cuMemMap on cuda; mmap + the sim arena on sim), so
  /// free space is never stranded between segments and whole free chunks can be unmapped.
  expandable,
};

/// Where an expandable segment gets the physical memory for a block that needs new chunks.
enum class expandable_growth {
  /// Maps it while the stream's reserved bytes stay within its peak live bytes plus
  /// remap_slack_percent (the block then takes the best fit); beyond, moves it: the block goes
  /// where it needs the fewest new chunks, then as many wholly free mapped chunks of the
  /// stream's segments as it still needs are unmapped before the new ones are mapped. Reserved
  /// memory then grows only when no mapped chunk of the stream is wholly free, so it follows
  /// live memory instead of keeping the high-water mark of every freed hole. Costs a synchronization of the stream (CUDA may still read a chunk being unmapped)
  /// and an unmap per moved chunk, on the growth path only.
  remap,
  /// Maps new chunks and keeps free ones mapped until they are released (empty_cache, the
  /// out-of-memory ladder): growth never waits for the stream, reserved never shrinks by itself.
  map_new,
  /// As map_new (free chunks stay mapped, growth never waits for the stream), and every free
  /// block is chosen by best fit, the lowest address among equals, blind to which chunks are
  /// mapped: so a workload that repeats its requests, once its free blocks are as they were
  /// when an iteration began, takes the same ranges again, all still mapped (no device call).
  /// Reserved is the union of the chunks one iteration touches: it holds only as well as best
  /// fit packs (bench/results/alloc_steady_sim.md).
  settle,
};

/// Where a small-pool request goes inside a larger free block of an expandable segment.
enum class small_block_placement {
  /// So that it ends on the first chunk boundary past the block's start plus the request (when
  /// the block reaches it): it touches the same chunks as at the start, but the rest of the free
  /// block then begins on a chunk boundary, so its whole chunks can be unmapped or moved (remap)
  /// instead of one of them staying mapped for a few free bytes.
  chunk_end,
  /// At the start of the free block (the behaviour before chunk_end).
  start,
};

/// Whether a stream may take memory cached by another stream.
enum class cross_stream_reuse {
  /// When a stream's own cache cannot serve a request and the device has no more memory to
  /// give, a free block cached by another stream is lent to it: the asking stream first waits
  /// (on the device, never the host) on an event recorded on the owner; at its free, an event
  /// recorded on the borrower holds the block until the borrower's work is done, then it returns
  /// to the owner's cache. So memory cached by an idle stream is never stranded, and a stream
  /// with room to grow builds its own cache (borrowing costs an event per allocation).
  borrow,
  /// Never: each stream only reuses what it freed itself (PyTorch's policy).
  never,
};

struct allocator_options {
  segment_kind segments = segment_kind::expandable;
  cross_stream_reuse reuse = cross_stream_reuse::borrow;
  /// Requests up to this size are served from the small pool.
  std::size_t small_request_limit = std::size_t{1} << 20;
  /// Segment size of the small pool (fixed segments).
  std::size_t small_segment_bytes = std::size_t{2} << 20;
  /// Segment size of the large pool for requests under large_segment_bytes / 2 (fixed segments);
  /// larger requests get a segment of their own size rounded to 2 MiB.
  std::size_t large_segment_bytes = std::size_t{20} << 20;
  /// Virtual bytes reserved per expandable segment; 0: a
  /// stream's first range is 64 MiB and each next one as large as its ranges so far, so address
  /// space grows with what the stream uses (at most twice it) and never starts at the device's size.
  std::size_t expandable_reserve_bytes = 0;
  expandable_growth growth = expandable_growth::remap;
  /// With expandable segments: a workload that repeats its requests (a training loop) is served,
  /// once a period of them has been seen twice and the last one still made device calls, from
  /// one arena planned for the whole period (docs/allocator.md, "Steady state"): no device call
  /// and no synchronization per iteration after that, and the arena packs the period's blocks
  /// by their known lifetimes. A request off the plan hands everything back to the pools.
  bool repeat_plan = true;
  /// With the repeat plan: a period the pools already serve without device calls is planned on
  /// a thread of the allocator's own while they serve on, and the plan starts at a later
  /// period's start once it is done, if the pools' free memory is still what it planned over
  /// (the allocating thread only checks each request against the period meanwhile). Off by
  /// default: the allocating thread then stalls once for the planning (milliseconds for a
  /// training step), but the plan starts at a known request, before the pools can drift; on,
  /// a loop whose pools move their free memory in the meantime may keep calling the device
  /// until a plan holds (docs/allocator.md, "Planning on a thread").
  bool plan_in_background = false;
  /// With growth remap: free chunks are moved only once the stream's reserved bytes would pass
  /// its peak allocated bytes plus this percentage; below, new chunks are mapped (no
  /// synchronization). 0 moves whenever a free chunk can be moved.
  std::size_t remap_slack_percent = 2;
  /// Mapping granularity of expandable segments (2 MiB is what CUDA offers on the H200).
  std::size_t granularity = std::size_t{2} << 20;
  /// Where small requests go inside larger free blocks of expandable segments.
  small_block_placement small_placement = small_block_placement::chunk_end;
  /// record_stream'd frees on one stream share a fence event (docs/allocator.md, "Fences"): the
  /// open fence is recorded once it holds this many frees ...
  std::size_t fence_batch_frees = 32;
  /// ... or this many bytes, or when the stream's previous fence completes, whichever is first.
  std::size_t fence_batch_bytes = std::size_t{64} << 20;
  /// Number of allocator events kept in the history ring buffer; 0 disables the history.
  std::size_t history_capacity = 0;
  /// Called on alloc, free, record_stream and cross-stream reuse; must outlive the allocator.
  allocator_observer* observer = nullptr;
};

/// Parses "key:value,key:value" (the STREAMSAFE_ALLOC_CONF syntax) over `base`. Sizes accept
/// the suffixes KiB, MiB and GiB. Throws usage_error naming an unknown key or a bad value.
[[nodiscard]] allocator_options parse_alloc_conf(std::string_view text, allocator_options base = {});

/// The options from the STREAMSAFE_ALLOC_CONF environment variable (defaults when unset).
[[nodiscard]] allocator_options alloc_options_from_env();

}  // namespace streamsafe
