// Rule pageable_copy: copies staged through pageable host memory run at a fraction of pinned
// bandwidth (8.6 vs 55.5 GB/s H2D on an H200) and are synchronous with the host.
#include <cstdio>

#include "monitor/rules/rules.hpp"
#include "monitor/text_format.hpp"

namespace streamsafe::monitor::detail {

std::optional<finding> check_pageable_copies(const diagnosis_input& in) {
  finding f{finding_kind::pageable_copy, 0, 0, {}, {}, {}};
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < in.t.ops.size(); ++i) {
    const gpu_op& op = in.t.ops[i];
    if (op.kind != op_kind::memcpy || (op.src != memory_kind::pageable && op.dst != memory_kind::pageable)) continue;
    ++f.occurrences;
    f.cost_us += op.dur_us;
    bytes += op.bytes;
    if (f.ops.size() < 3) f.ops.push_back(i);
  }
  if (f.occurrences == 0) return std::nullopt;
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f MB in %s, %.2f GB/s", static_cast<double>(bytes) / 1e6,
                format_duration(f.cost_us).c_str(), f.cost_us > 0 ? static_cast<double>(bytes) / (f.cost_us * 1e3) : 0.0);
  f.evidence = std::to_string(f.occurrences) + " copies from/to pageable host memory (" + rate + "); first: " +
               format_op(in.t, f.ops.front(), in.origin_us);
  f.fix = "allocate the host buffer pinned (cudaHostAlloc, or tensor.pin_memory() in PyTorch) and copy with "
          "cudaMemcpyAsync / non_blocking=True on a copy stream: pinned copies are several times faster and "
          "overlap with compute";
  return f;
}

}  // namespace streamsafe::monitor::detail
