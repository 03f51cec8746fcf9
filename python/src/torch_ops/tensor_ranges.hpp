// The bytes a tensor touches, in C++: the same rule as streamsafe.torch._ranges (see its module
// comment), so that both tiers hand the engine the same ranges. Exact up to max_runs contiguous
// runs, else the minimal covering interval (a possible false race, never a missed one).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "streamsafe/hazard/engine.hpp"

namespace streamsafe::python {

inline constexpr std::size_t max_runs = 64;  // streamsafe.torch._ranges.MAX_RUNS

/// Appends the byte ranges `tensor` may touch to `out` (nothing for an empty tensor).
void append_byte_ranges(const at::Tensor& tensor, std::vector<hazard::byte_range>& out);

/// The first byte of the storage behind `tensor` (data_ptr less the offset, as the Python tier).
std::uint64_t storage_base(const at::Tensor& tensor);

}  // namespace streamsafe::python
