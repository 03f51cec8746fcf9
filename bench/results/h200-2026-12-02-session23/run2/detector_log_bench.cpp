#include "alloc/repeat_detector.hpp"
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
#include <cstdlib>
using namespace streamsafe::detail;
struct ev { bool alloc; unsigned long addr; std::size_t bytes; };
int main() {
  std::string line; std::getline(std::cin, line);
  std::vector<ev> evs;
  while (std::getline(std::cin, line)) {
    std::stringstream ss(line); std::string a, addr, size;
    std::getline(ss, a, ','); std::getline(ss, addr, ','); std::getline(ss, size, ',');
    if (a == "alloc") evs.push_back({true, std::stoul(addr), ((std::stoul(size) + 511) / 512) * 512});
    else if (a == "free_requested") evs.push_back({false, std::stoul(addr), 0});
  }
  repeat_detector d;
  std::unordered_map<unsigned long, std::uint64_t> seqof;
  std::uint64_t seq = 0; int found = 0;
  for (int it = 0; it < 30; ++it) {
    auto t0 = std::chrono::steady_clock::now();
    for (const ev& e : evs) {
      ++seq;
      if (e.alloc) { seqof[e.addr] = seq; if(getenv("DET")) d.note_alloc(seq, e.bytes, streamsafe::stream_id{}, 0); }
      else { auto f = seqof.find(e.addr); std::uint64_t by = f == seqof.end() ? 0 : f->second; if(getenv("DET")) d.note_free(seq, by, 0); (void)by; }
      if (d.take_period()) { ++found; }
    }
    auto t1 = std::chrono::steady_clock::now();
    std::printf("iter %d: %.1f ns/op (incl map) found %d\n", it, std::chrono::duration<double, std::nano>(t1 - t0).count() / evs.size(), found);
  }
}
