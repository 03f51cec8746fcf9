// Multi-rank scaffolding for the sim collective tests: one sim device and host thread per rank,
// a rank's gradients written by a sim kernel on a producer stream, and the expected sums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "streamsafe/device.hpp"
#include "streamsafe/pipeline/collectives/bucket_plan.hpp"
#include "streamsafe/pipeline/collectives/communicator.hpp"
#include "streamsafe/pipeline/collectives/sim_communicator.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::collectives::testing {

/// Holds a stream's worker until another stream's kernel (or the host) opens it; a gate never
/// opened gives up after 20 s, so a broken overlap fails the test instead of hanging it.
class gate {
 public:
  void pass();
  void open();
  [[nodiscard]] bool gave_up();

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
  bool gave_up_ = false;
};

/// Gradients of three layers; with kSmallCap they make 4 buckets of different sizes.
std::vector<gradient> model_gradients();
inline constexpr std::size_t kSmallCap = 4200;

/// The parameters of the multi-rank suites: rank count and sim mode.
using rank_mode = std::tuple<int, sim_mode>;
/// 2 and 4 ranks, in each sim mode.
[[nodiscard]] inline auto rank_modes() {
  return ::testing::Combine(::testing::Values(2, 4), ::testing::Values(sim_mode::deterministic, sim_mode::threaded));
}
[[nodiscard]] std::string rank_mode_name(const ::testing::TestParamInfo<rank_mode>& info);

class RankModeTest : public ::testing::TestWithParam<rank_mode> {
 protected:
  [[nodiscard]] int ranks() const { return std::get<0>(GetParam()); }
  [[nodiscard]] sim_mode mode() const { return std::get<1>(GetParam()); }
};

/// Runs `body(rank, device, comm)` for every rank on a thread of its own, each rank with a new
/// sim device in `mode`; returns each rank's failure text ("" when it returned normally).
std::vector<std::string> run_ranks(int ranks, sim_mode mode, sim_group_options options,
                                   const std::function<void(int, Device&, communicator&)>& body);

/// What rank `rank` writes at float `index` of its gradients in step `step`.
[[nodiscard]] float gradient_value(int rank, std::size_t index, std::uint64_t step);
/// The all-reduced value there: the sum over `ranks` ranks.
[[nodiscard]] float reduced_value(int ranks, std::size_t index, std::uint64_t step);

/// Enqueues on `producer` a sim kernel writing bucket `b`'s gradients of `rank` for `step`.
void produce_bucket(StreamRef producer, float* gradients, const bucket& b, int rank, std::uint64_t step);

/// Copies the flat buffer to the host on `stream` and waits for it.
std::vector<float> read_floats(StreamRef stream, const float* device_data, std::size_t count);

/// The float indices of a plan's gradients (not the alignment gaps between buckets).
std::vector<std::size_t> gradient_indices(const bucket_plan& plan);

}  // namespace streamsafe::collectives::testing
