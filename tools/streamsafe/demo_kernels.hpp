// Small kernels over uint32 arrays that run on both backends, used by `streamsafe demo`, the tests
// and the benchmarks: the producer's write, the consumer's read, a delay that makes a race show,
// and a fixed amount of arithmetic for timing measurements.
#pragma once

#include <cstddef>
#include <cstdint>

#include "streamsafe/kernel.hpp"

namespace streamsafe::demo {

/// Writes `value` to data[0..count).
kernel fill_kernel(std::uint32_t* data, std::size_t count, std::uint32_t value);
/// Like fill_kernel, but on cuda it spins about `spin_us` microseconds first, so a consumer
/// that forgot to wait reads before the write lands. On sim the delay comes from the stream's
/// pacing (sim_pacing::starved) instead.
kernel slow_fill_kernel(std::uint32_t* data, std::size_t count, std::uint32_t value, unsigned spin_us = 2000);
/// Keeps its stream busy for about `busy_us` microseconds, as a training step's compute would,
/// then writes data[0]: on cuda the spin of slow_fill_kernel, on sim a sleep of the stream's
/// worker (threaded mode) or of whichever host call runs it (deterministic).
kernel busy_kernel(std::uint32_t* data, unsigned busy_us);
/// out[i] = 2 * in[i].
kernel double_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count);
/// Like copying `count` values from `in` to `out`, after a delay as in slow_fill_kernel.
kernel slow_copy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count, unsigned spin_us = 2000);
/// Copies `count` values from `in` to `out`; on cuda each thread first runs a dependent chain of
/// `fma_iterations` FMAs, so the kernel's length is fixed work, not a clock reading (the spin of
/// slow_copy_kernel reads %globaltimer, which profiling tools may change). On sim only the copy
/// runs (sim ops take as long as their host work and the stream's pacing).
kernel compute_copy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count, unsigned fma_iterations);

namespace cuda_launch {
// Host launchers of the CUDA kernels (demo_kernels.cu); defined only with the cuda backend.
void fill(native_stream stream, std::uint32_t* data, std::size_t count, std::uint32_t value, unsigned spin_us);
void doubled(native_stream stream, const std::uint32_t* in, std::uint32_t* out, std::size_t count);
void copy(native_stream stream, const std::uint32_t* in, std::uint32_t* out, std::size_t count, unsigned spin_us);
void compute_copy(native_stream stream, const std::uint32_t* in, std::uint32_t* out, std::size_t count,
                  unsigned fma_iterations);
}  // namespace cuda_launch

}  // namespace streamsafe::demo
