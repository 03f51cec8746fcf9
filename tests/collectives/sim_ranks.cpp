#include "sim_ranks.hpp"

#include <exception>
#include <memory>
#include <thread>

namespace streamsafe::collectives::testing {

void gate::pass() {
  std::unique_lock lock(mutex_);
  if (!opened_.wait_for(lock, std::chrono::seconds(20), [&] { return open_; })) gave_up_ = true;
}

void gate::open() {
  {
    std::lock_guard lock(mutex_);
    open_ = true;
  }
  opened_.notify_all();
}

bool gate::gave_up() {
  std::lock_guard lock(mutex_);
  return gave_up_;
}

std::vector<gradient> model_gradients() {
  return {{"fc1.weight", 4096}, {"fc1.bias", 256}, {"fc2.weight", 8192},
          {"fc2.bias", 128},    {"fc3.weight", 2048}, {"fc3.bias", 64}};
}

std::vector<std::string> run_ranks(int ranks, sim_mode mode, sim_group_options options,
                                   const std::function<void(int, Device&, communicator&)>& body) {
  auto group = std::make_shared<sim_group>(ranks, options);
  std::vector<std::string> failures(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        Device device = Device::sim(sim_options{.memory_capacity = std::size_t{16} << 20,
                                                .mode = mode,
                                                .seed = static_cast<std::uint64_t>(r) + 1,
                                                .starve_delay = std::chrono::microseconds(500)});
        sim_communicator comm(group, r);
        body(r, device, comm);
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return failures;
}

std::string rank_mode_name(const ::testing::TestParamInfo<rank_mode>& info) {
  return std::to_string(std::get<0>(info.param)) + "Ranks" +
         (std::get<1>(info.param) == sim_mode::threaded ? "Threaded" : "Deterministic");
}

float gradient_value(int rank, std::size_t index, std::uint64_t step) {
  return static_cast<float>((rank + 1) * static_cast<int>(index % 7 + 1 + step));
}

float reduced_value(int ranks, std::size_t index, std::uint64_t step) {
  float sum = 0;
  for (int r = 0; r < ranks; ++r) sum += gradient_value(r, index, step);
  return sum;
}

void produce_bucket(StreamRef producer, float* gradients, const bucket& b, int rank, std::uint64_t step) {
  const std::size_t first = b.offset / sizeof(float);
  const std::size_t last = first + b.bytes / sizeof(float);
  producer.launch(kernel{.name = "backward " + b.name, .cuda = {}, .sim = [=] {
                           for (std::size_t i = first; i < last; ++i) gradients[i] = gradient_value(rank, i, step);
                         }});
}

std::vector<float> read_floats(StreamRef stream, const float* device_data, std::size_t count) {
  Device device = stream.device();
  std::unique_ptr<float, std::function<void(float*)>> staging(
      static_cast<float*>(device.allocate_pinned(count * sizeof(float))),
      [device](float* p) mutable { device.deallocate_pinned(p); });
  stream.copy(staging.get(), device_data, count * sizeof(float));
  stream.synchronize();
  return {staging.get(), staging.get() + count};
}

std::vector<std::size_t> gradient_indices(const bucket_plan& plan) {
  std::vector<std::size_t> indices;
  for (const auto& b : plan.buckets()) {
    for (std::size_t i = b.offset / sizeof(float); i < (b.offset + b.bytes) / sizeof(float); ++i) indices.push_back(i);
  }
  return indices;
}

}  // namespace streamsafe::collectives::testing

#include "rank_setup.hpp"

namespace streamsafe::collectives::testing {

std::vector<std::uint32_t> plan_order(const bucket_plan& plan) {
  std::vector<std::uint32_t> order(plan.buckets().size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  return order;
}

}  // namespace streamsafe::collectives::testing
