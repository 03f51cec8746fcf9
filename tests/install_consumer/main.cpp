// Uses the installed library: one wait_event hand-off on the best device.
#include <cstdio>

#include "streamsafe/streamsafe.hpp"

int main() {
  auto device = streamsafe::Device::best();
  streamsafe::Stream producer(device, {.name = "producer"});
  streamsafe::Stream consumer(device, {.name = "consumer"});
  consumer.wait(producer);
  consumer.synchronize();
  std::printf("streamsafe %s on %s: ok\n", STREAMSAFE_VERSION, device.name().c_str());
  return 0;
}
