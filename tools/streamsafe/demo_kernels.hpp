// Small kernels over uint32 arrays that run on both backends, used by `streamsafe demo` and by
// the tests: the producer's write, the consumer's read, and a delay that makes a race show.
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
/// out[i] = 2 * in[i].
kernel double_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count);
/// Like copying `count` values from `in` to `out`, after a delay as in slow_fill_kernel.
kernel slow_copy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count, unsigned spin_us = 2000);

namespace cuda_launch {
// Host launchers of the CUDA kernels (demo_kernels.cu); defined only with the cuda backend.
void fill(native_stream stream, std::uint32_t* data, std::size_t count, std::uint32_t value, unsigned spin_us);
void doubled(native_stream stream, const std::uint32_t* in, std::uint32_t* out, std::size_t count);
void copy(native_stream stream, const std::uint32_t* in, std::uint32_t* out, std::size_t count, unsigned spin_us);
}  // namespace cuda_launch

}  // namespace streamsafe::demo
