#include "backends.hpp"

#include <algorithm>


namespace streamsafe::testing {

std::string to_string(test_backend backend) {
  switch (backend) {
    case test_backend::sim_deterministic: return "SimDeterministic";
    case test_backend::sim_threaded: return "SimThreaded";
    case test_backend::cuda: return "Cuda";
  }
  return "Unknown";
}

Device make_device(test_backend backend, std::uint64_t seed, std::size_t sim_capacity) {
  switch (backend) {
    case test_backend::sim_deterministic:
      return Device::sim(sim_options{.memory_capacity = sim_capacity, .mode = sim_mode::deterministic, .seed = seed});
    case test_backend::sim_threaded:
      return Device::sim(sim_options{.memory_capacity = sim_capacity,
                                     .mode = sim_mode::threaded,
                                     .seed = seed,
                                     .starve_delay = std::chrono::microseconds(500)});
    case test_backend::cuda: return Device::cuda(0);
  }
  return Device::sim();
}

stream_options slow_stream(std::string name) {
  return stream_options{.name = std::move(name), .pacing = sim_pacing::starved};
}

std::vector<std::uint32_t> read_back(StreamRef stream, const std::uint32_t* device_data, std::size_t count) {
  Device device = stream.device();
  auto* staging = static_cast<std::uint32_t*>(device.allocate_pinned(count * sizeof(std::uint32_t)));
  stream.copy(staging, device_data, count * sizeof(std::uint32_t));
  stream.synchronize();
  std::vector<std::uint32_t> values(staging, staging + count);
  device.deallocate_pinned(staging);
  return values;
}

void BackendTest::SetUp() {
  if (GetParam() == test_backend::cuda && Device::cuda_device_count() == 0) {
    GTEST_SKIP() << "no CUDA device here (the cuda variant runs on a GPU machine)";
  }
  device_.emplace(make_device(GetParam()));
}

std::string backend_test_name(const ::testing::TestParamInfo<test_backend>& info) {
  return to_string(info.param);
}

}  // namespace streamsafe::testing
