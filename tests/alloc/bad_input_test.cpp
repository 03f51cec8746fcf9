// Bad input gives a clear error and leaves the allocator intact.
#include <gtest/gtest.h>

#include <string>

#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe {
namespace {

struct BadInputTest : ::testing::Test {
  Device device = Device::sim(sim_options{.memory_capacity = 16 << 20});
  Stream stream{device};
  caching_allocator alloc{device, allocator_options{}};

  void expect_intact() {
    void* p = alloc.allocate(1000, stream);
    EXPECT_NE(p, nullptr);
    alloc.deallocate(p);
    EXPECT_EQ(alloc.stats().allocation.current, 0);
  }
};

template <typename Call>
std::string message_of(Call call) {
  try {
    call();
  } catch (const usage_error& e) {
    return e.what();
  }
  return "";
}

TEST_F(BadInputTest, DoubleFree) {
  void* p = alloc.allocate(1000, stream);
  alloc.deallocate(p);
  EXPECT_NE(message_of([&] { alloc.deallocate(p); }).find("double free"), std::string::npos);
  expect_intact();
}

TEST_F(BadInputTest, UnknownPointer) {
  int local = 0;
  EXPECT_NE(message_of([&] { alloc.deallocate(&local); }).find("not a live allocation"), std::string::npos);
  void* p = alloc.allocate(1000, stream);
  EXPECT_THROW(alloc.deallocate(static_cast<char*>(p) + 512), usage_error);  // interior pointer
  alloc.deallocate(p);
  expect_intact();
}

TEST_F(BadInputTest, ZeroBytesGiveNullAndNullFreeIsIgnored) {
  EXPECT_EQ(alloc.allocate(0, stream), nullptr);
  alloc.deallocate(nullptr);
  expect_intact();
}

TEST_F(BadInputTest, AbsurdSizes) {
  EXPECT_NE(message_of([&] { (void)alloc.allocate(~std::size_t{0}, stream); }).find("larger than any device"),
            std::string::npos);
  EXPECT_THROW((void)alloc.allocate(std::size_t{1} << 40, stream), out_of_memory);  // plausible but too big here
  expect_intact();
}

TEST_F(BadInputTest, RecordStreamOnAForeignPointer) {
  int local = 0;
  EXPECT_NE(message_of([&] { alloc.record_stream(&local, stream); }).find("record_stream"), std::string::npos);
  expect_intact();
}

TEST_F(BadInputTest, StreamOfAnotherDevice) {
  Device other = Device::sim();
  Stream foreign(other);
  EXPECT_NE(message_of([&] { (void)alloc.allocate(1000, foreign); }).find("another device"), std::string::npos);
  void* p = alloc.allocate(1000, stream);
  EXPECT_THROW(alloc.record_stream(p, foreign), usage_error);
  alloc.deallocate(p);
  expect_intact();
}

}  // namespace
}  // namespace streamsafe
