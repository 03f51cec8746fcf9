// The allocators the replay benchmark (replay_bench.cpp) compares besides streamsafe's, each a
// replay_target on the replay's streams, and which of the replay's counters each can count.
#pragma once

#include <memory>
#include <string>

#include "streamsafe/alloc/trace_replay.hpp"

namespace streamsafe::bench {

/// Which figures of replay_counters a target really counts; the others read 0 and the
/// benchmark prints them as null. peak_reserved_bytes is counted by every target.
struct replay_counted {
  bool device_calls = false;
  bool host_syncs = false;
  bool cross_stream_reuses = false;
};

struct replay_resource {
  std::unique_ptr<replay_target> target;  ///< nullptr: it cannot run here, and `why` says why
  replay_counted counted;
  std::string why;
};

/// PyTorch's c10 CUDACachingAllocator on device 0 (emptied when the target is destroyed, so the
/// next run starts cold). c10 reads PYTORCH_CUDA_ALLOC_CONF once, when it initializes, so
/// `expandable` (expandable_segments) must match how the process was started: this refuses,
/// with `why`, when the variable says otherwise. Device calls: num_device_alloc +
/// num_device_free; host syncs: num_sync_all_streams (its synchronize_and_free_events calls;
/// the implicit synchronization of a cudaFree is not counted).
[[nodiscard]] replay_resource make_c10_replay(bool expandable);

/// cudaMallocAsync / cudaFreeAsync on device 0's default pool, its release threshold at the
/// maximum so that it caches (trimmed to 0 when the target is destroyed). A block another
/// stream used (record_stream) is freed on its allocation stream after that stream waits for an
/// event recorded on each such stream at the free: the stream-ordered form of the rule. Device
/// calls and host syncs happen inside the driver and are not countable; reserved is the pool's
/// cudaMemPoolAttrReservedMemHigh.
[[nodiscard]] replay_resource make_cuda_async_replay();

}  // namespace streamsafe::bench
