// Runs one test body on every backend: sim (deterministic), sim (threaded) and cuda. The cuda
// variant skips cleanly when no GPU is present, so the same semantic tests run in CI (sim) and
// on a GPU machine (all three).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "demo_kernels.hpp"
#include "streamsafe/device.hpp"
#include "streamsafe/kernel.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::testing {

enum class test_backend { sim_deterministic, sim_threaded, cuda };

std::string to_string(test_backend backend);
/// The device for `backend`; `seed` feeds the sim scheduler, `sim_capacity` sizes a sim device.
Device make_device(test_backend backend, std::uint64_t seed = 1, std::size_t sim_capacity = std::size_t{64} << 20);
/// The streams of a test that must lose a race on sim: starved there, normal elsewhere.
stream_options slow_stream(std::string name);

using demo::double_kernel;
using demo::fill_kernel;
using demo::slow_copy_kernel;
using demo::slow_fill_kernel;

/// Copies `count` values from device memory to a host vector, synchronously on `stream`.
std::vector<std::uint32_t> read_back(StreamRef stream, const std::uint32_t* device_data, std::size_t count);

class BackendTest : public ::testing::TestWithParam<test_backend> {
 protected:
  void SetUp() override;
  [[nodiscard]] bool deterministic() const { return GetParam() == test_backend::sim_deterministic; }
  Device& device() { return *device_; }

 private:
  std::optional<Device> device_;
};

std::string backend_test_name(const ::testing::TestParamInfo<test_backend>& info);

}  // namespace streamsafe::testing

#define STREAMSAFE_ALL_BACKENDS(suite)                                                                         \
  INSTANTIATE_TEST_SUITE_P(Backends, suite,                                                                    \
                           ::testing::Values(::streamsafe::testing::test_backend::sim_deterministic,           \
                                             ::streamsafe::testing::test_backend::sim_threaded,                \
                                             ::streamsafe::testing::test_backend::cuda),                       \
                           ::streamsafe::testing::backend_test_name)
