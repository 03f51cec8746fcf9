/* The C ABI of libstreamsafe_torch_alloc.so: streamsafe's caching allocator as PyTorch's
 * pluggable CUDA allocator (torch.cuda.memory.CUDAPluggableAllocator). Linked against the CUDA
 * runtime only; python/streamsafe/torch/_allocator.py loads it (docs/pytorch.md).
 *
 * One allocator per device ordinal, made at its first allocation with the options set so far.
 * Streams: torch's cudaStream_t values are adopted once each and kept for the life of the
 * process (torch never destroys its pooled streams; a stream a program creates and destroys
 * itself must not be destroyed while memory allocated on it is live). nullptr and
 * cudaStreamLegacy are the legacy default stream; cudaStreamPerThread is the calling thread's
 * per-thread stream.
 *
 * Graph capture: a free whose allocation stream or record_stream'd streams are capturing is
 * deferred, untouched, until none of them is, then done at the next call into the library
 * (allocation, free, empty_cache). An allocation on a capturing stream fails (see malloc).
 *
 * Threads: every function may be called from any thread, concurrently.
 * Errors: malloc and record_stream throw a C++ exception (std::runtime_error) whose message
 * names the call, the stream and the pointer; torch turns it into a Python RuntimeError. free
 * never throws: a free that fails is reported on stderr and the block leaks. The other calls
 * return a status and leave the message in streamsafe_torch_last_error(). */
#ifndef STREAMSAFE_TORCH_ALLOC_H
#define STREAMSAFE_TORCH_ALLOC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st* streamsafe_cuda_stream;

/* Bumped when a signature or the stats layout changes; the Python side checks it. */
int streamsafe_torch_abi_version(void);

/* torch's alloc_fn: `size` bytes usable at once on `stream` (the current stream). */
void* streamsafe_torch_malloc(ssize_t size, int device, streamsafe_cuda_stream stream);
/* torch's free_fn: `stream` is the allocation stream torch remembered. */
void streamsafe_torch_free(void* ptr, ssize_t size, int device, streamsafe_cuda_stream stream);
/* torch's record_stream_fn: `stream` also uses the block at `ptr` (the storage base). */
void streamsafe_torch_record_stream(void* ptr, streamsafe_cuda_stream stream);
/* torch's reset_fn (torch.cuda.empty_cache): waits for pending frees and returns every free
 * cached segment of every device. */
void streamsafe_torch_empty_cache(void);

/* Options in the STREAMSAFE_ALLOC_CONF syntax ("key:value,..."), over those of the environment
 * variable. Only before the first allocation (an empty string is accepted at any time). 0 on
 * success, -1 with last_error set. */
int streamsafe_torch_configure(const char* conf);

typedef struct {
  const char* key; /* PyTorch's memory_stats key, e.g. "allocated_bytes.all.current" */
  int64_t value;
} streamsafe_torch_stat;

/* Fills up to `capacity` entries for `device` (zeros for a device not used yet) and returns how
 * many there are; call with capacity 0 to size the array. Keys are static strings. */
size_t streamsafe_torch_stats(int device, streamsafe_torch_stat* out, size_t capacity);
/* Sets every peak of `device` to its current value. 0, or -1 with last_error set. */
int streamsafe_torch_reset_peak_stats(int device);
/* Frees held back because a graph was being captured on their streams. */
size_t streamsafe_torch_deferred_frees(void);
/* The message of the calling thread's last failed call ("" when none). */
const char* streamsafe_torch_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
