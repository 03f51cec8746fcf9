// The collector's back-off when another CUPTI client holds the process (Nsight Systems, the
// PyTorch profiler): this test is that other client, subscribing to CUPTI itself before a
// collector starts. The collector must refuse with a message naming the reason and the device,
// throw nothing, leave the device usable, and start normally once the other client is gone.
// Built with the cuda backend only; runs on a GPU machine (skips without a device).
#include <cupti.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "streamsafe/device.hpp"
#include "streamsafe/monitor/collector.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::monitor {
namespace {

/// A CUPTI subscription of its own, as a profiler attached to the process has.
class foreign_cupti_client {
 public:
  foreign_cupti_client() {
    result_ = cuptiSubscribe(&handle_, [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}, nullptr);
  }
  ~foreign_cupti_client() { detach(); }
  foreign_cupti_client(const foreign_cupti_client&) = delete;
  foreign_cupti_client& operator=(const foreign_cupti_client&) = delete;
  [[nodiscard]] bool attached() const { return result_ == CUPTI_SUCCESS; }
  void detach() {
    if (attached()) (void)cuptiUnsubscribe(handle_);
    result_ = CUPTI_ERROR_UNKNOWN;
  }

 private:
  CUpti_SubscriberHandle handle_ = nullptr;
  CUptiResult result_ = CUPTI_ERROR_UNKNOWN;
};

/// A copy there and back: the device works whatever the collector did.
bool round_trip_works(Device& device) {
  Stream stream(device);
  std::vector<std::uint32_t> host(1024, 7), back(1024, 0);
  void* buffer = device.allocate(host.size() * sizeof(std::uint32_t));
  stream.copy(buffer, host.data(), host.size() * sizeof(std::uint32_t));
  stream.copy(back.data(), buffer, back.size() * sizeof(std::uint32_t));
  stream.synchronize();
  device.deallocate(buffer);
  return back == host;
}

TEST(CollectorCuptiBackoff, AnotherClientMakesTheCollectorStandAsideAndTheDeviceStaysUsable) {
  if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  auto device = Device::cuda(0);
  foreign_cupti_client other;
  ASSERT_TRUE(other.attached()) << "the test's own CUPTI subscription failed";
  {
    collector refused(device);
    EXPECT_EQ(refused.status(), collector_status::inactive);
    EXPECT_NE(refused.status_message().find("another CUPTI client"), std::string::npos) << refused.status_message();
    EXPECT_NE(refused.status_message().find(device.name()), std::string::npos) << refused.status_message();
    EXPECT_TRUE(round_trip_works(device));
    EXPECT_EQ(refused.usage().streams.size(), 0u) << "an inactive collector collects nothing";
  }
  other.detach();
  collector accepted(device);
  EXPECT_EQ(accepted.status(), collector_status::active) << accepted.status_message();
  EXPECT_TRUE(round_trip_works(device));
  EXPECT_GT(accepted.usage().streams.size(), 0u) << "the copies were collected once the other client left";
}

}  // namespace
}  // namespace streamsafe::monitor
