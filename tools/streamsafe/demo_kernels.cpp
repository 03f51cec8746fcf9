#include "demo_kernels.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "streamsafe/config.hpp"

namespace streamsafe::demo {

kernel fill_kernel(std::uint32_t* data, std::size_t count, std::uint32_t value) {
  return slow_fill_kernel(data, count, value, 0);
}

kernel slow_fill_kernel(std::uint32_t* data, std::size_t count, std::uint32_t value, unsigned spin_us) {
  kernel work{.name = spin_us > 0 ? "slow_fill" : "fill"};
  work.sim = [=] { std::fill(data, data + count, value); };
#if STREAMSAFE_HAVE_CUDA
  work.cuda = [=](native_stream stream) { cuda_launch::fill(stream, data, count, value, spin_us); };
#endif
  return work;
}

kernel busy_kernel(std::uint32_t* data, unsigned busy_us) {
  kernel work = slow_fill_kernel(data, 1, 0, busy_us);
  work.name = "busy";
  work.sim = [=] {
    std::this_thread::sleep_for(std::chrono::microseconds(busy_us));
    data[0] = 0;
  };
  return work;
}

kernel double_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count) {
  kernel work{.name = "double"};
  work.sim = [=] { std::transform(in, in + count, out, [](std::uint32_t v) { return 2 * v; }); };
#if STREAMSAFE_HAVE_CUDA
  work.cuda = [=](native_stream stream) { cuda_launch::doubled(stream, in, out, count); };
#endif
  return work;
}

kernel slow_copy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count, unsigned spin_us) {
  kernel work{.name = "slow_copy"};
  work.sim = [=] { std::copy(in, in + count, out); };
#if STREAMSAFE_HAVE_CUDA
  work.cuda = [=](native_stream stream) { cuda_launch::copy(stream, in, out, count, spin_us); };
#endif
  return work;
}

kernel compute_copy_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t count, unsigned fma_iterations) {
  kernel work{.name = "compute_copy"};
  work.sim = [=] { std::copy(in, in + count, out); };
#if STREAMSAFE_HAVE_CUDA
  work.cuda = [=](native_stream stream) { cuda_launch::compute_copy(stream, in, out, count, fma_iterations); };
#else
  (void)fma_iterations;
#endif
  return work;
}

}  // namespace streamsafe::demo
