// Device::adopt_stream: a foreign native stream used as one of ours. The cuda cases run on a GPU
// machine (they skip here); sim has no native streams and refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <thread>

#include "backends.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::testing {
namespace {

using ::testing::Each;
using ::testing::Eq;

constexpr std::size_t count = 1 << 16;

class AdoptStreamCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Device::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device here (runs on a GPU machine)";
    device_.emplace(Device::cuda(0));
    in_ = static_cast<std::uint32_t*>(device_->allocate(count * sizeof(std::uint32_t)));
    out_ = static_cast<std::uint32_t*>(device_->allocate(count * sizeof(std::uint32_t)));
  }
  void TearDown() override {
    if (!device_) return;
    device_->synchronize();
    device_->deallocate(in_);
    device_->deallocate(out_);
  }

  std::optional<Device> device_;
  std::uint32_t* in_ = nullptr;
  std::uint32_t* out_ = nullptr;
};

TEST_F(AdoptStreamCuda, TheWrapperIsTheNativeStreamAndDoesNotDestroyIt) {
  Stream owner(*device_, {.name = "owner"});
  {
    Stream adopted = device_->adopt_stream(owner.native());
    EXPECT_EQ(adopted.native(), owner.native());
    EXPECT_NE(adopted.id(), owner.id());
    adopted.launch(slow_fill_kernel(in_, count, 5));
  }
  // Same native stream: the owner's copy is ordered after the adopted stream's slow fill, and
  // the stream outlived its wrapper.
  owner.launch(double_kernel(in_, out_, count));
  EXPECT_THAT(read_back(owner, out_, count), Each(Eq(10U)));
}

TEST_F(AdoptStreamCuda, APerThreadStreamUsedFromAnotherThreadGoesThroughTheLegacyStream) {
  const auto per_thread = reinterpret_cast<native_stream>(std::uintptr_t{2});  // cudaStreamPerThread
  std::optional<Stream> adopted;
  std::promise<void> launched;
  std::promise<void> finished;  // the owning thread outlives the checks: its stream ends with it
  std::thread owner([&] {
    adopted.emplace(device_->adopt_stream(per_thread));
    adopted->launch(slow_fill_kernel(in_, count, 3));
    launched.set_value();
    finished.get_future().wait();
  });
  launched.get_future().wait();
  Stream consumer(*device_, {.name = "consumer"});
  consumer.wait(*adopted);  // from this thread: an event recorded on the legacy stream
  consumer.launch(double_kernel(in_, out_, count));
  EXPECT_THAT(read_back(consumer, out_, count), Each(Eq(6U)));
  EXPECT_FALSE(adopted->query());  // not knowable from here: "not done"
  adopted->synchronize();          // synchronizes the device instead
  finished.set_value();
  owner.join();
}

TEST(AdoptStreamSim, SimRefusesNamingTheBackend) {
  Device device = Device::sim();
  try {
    (void)device.adopt_stream(nullptr);
    FAIL() << "adopt_stream on sim did not throw";
  } catch (const usage_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("only the cuda backend has native streams"));
  }
}

}  // namespace
}  // namespace streamsafe::testing
