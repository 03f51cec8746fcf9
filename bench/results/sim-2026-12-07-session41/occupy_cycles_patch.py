import sys
p=sys.argv[1]
s=open(p).read()
a="bool iteration_plan::occupy(std::size_t index, StreamImpl& stream, std::vector<std::shared_ptr<StreamImpl>>& waits) {\n"
assert a in s
s=s.replace(a, a+"""  struct tsc_scope { std::uint64_t t0 = __rdtsc(); std::uint64_t& acc; ~tsc_scope(){ acc += __rdtsc() - t0; } };
  static std::uint64_t acc = 0; static std::uint64_t last_period = ~0ull;
  { const std::uint64_t per = blocks_.size(); const std::uint64_t k = per ? taken_since_activation_ / per : 0;
    if (k != last_period) { if (last_period != ~0ull && per > 10000) std::fprintf(stderr, "OCCUPY period %lu: %.2f Mcycles\\n", (unsigned long)last_period, acc / 1e6); acc = 0; last_period = k; } }
  tsc_scope ts_{__rdtsc(), acc};
""")
s=s.replace('namespace streamsafe::detail {\n','#include <x86intrin.h>\n#include <cstdio>\nnamespace streamsafe::detail {\n',1)
open(p,'w').write(s)
