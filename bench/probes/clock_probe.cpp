// What one read of the clock costs on this host: the replay times every allocator call between
// two reads of std::chrono::steady_clock, so each operation's figure carries about one read's
// cost, whichever allocator serves it. Prints the clock source and ns per read (steady_clock and
// the raw time-stamp counter), the median of 5 runs of 10 million reads each.
//   g++ -O2 -std=c++20 bench/probes/clock_probe.cpp -o clock_probe && ./clock_probe
#include <x86intrin.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

constexpr int reads = 10'000'000;

template <class Read>
double ns_per_read(Read read) {
  std::array<double, 5> runs{};
  std::uint64_t sink = 0;
  for (double& run : runs) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reads; ++i) sink += read() & 1U;
    run = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / reads;
  }
  std::sort(runs.begin(), runs.end());
  if (sink == 1) std::puts("");  // keeps the reads
  return runs[runs.size() / 2];
}

}  // namespace

int main() {
  std::string source = "unknown";
  std::ifstream("/sys/devices/system/clocksource/clocksource0/current_clocksource") >> source;
  const double steady = ns_per_read([] {
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  });
  const double tsc = ns_per_read([] { return static_cast<std::uint64_t>(__rdtsc()); });
  std::printf("clocksource %s: steady_clock::now %.1f ns per read, rdtsc %.1f ns per read\n", source.c_str(), steady,
              tsc);
  return 0;
}
