#include "tensor_ranges.hpp"

#include <algorithm>
#include <utility>

namespace streamsafe::python {
namespace {

struct dim {
  std::int64_t size;
  std::int64_t stride;
};

std::uint64_t address(const at::Tensor& tensor) {
  return reinterpret_cast<std::uintptr_t>(tensor.data_ptr());
}

// The element offsets of every run start: the outer dims enumerated as an odometer.
std::vector<std::int64_t> run_starts(const std::vector<dim>& outer) {
  std::vector<std::int64_t> starts{0};
  for (const auto& d : outer) {
    std::vector<std::int64_t> next;
    next.reserve(starts.size() * static_cast<std::size_t>(d.size));
    for (const auto start : starts) {
      for (std::int64_t i = 0; i < d.size; ++i) next.push_back(start + i * d.stride);
    }
    starts = std::move(next);
  }
  std::sort(starts.begin(), starts.end());
  return starts;
}

}  // namespace

std::uint64_t storage_base(const at::Tensor& tensor) {
  return address(tensor) - static_cast<std::uint64_t>(tensor.storage_offset() * tensor.element_size());
}

void append_byte_ranges(const at::Tensor& tensor, std::vector<hazard::byte_range>& out) {
  const auto elem = static_cast<std::int64_t>(tensor.element_size());
  const auto base = address(tensor);
  if (tensor.is_contiguous()) {
    const auto nbytes = static_cast<std::uint64_t>(tensor.numel() * elem);
    if (nbytes != 0) out.push_back({base, nbytes});
    return;
  }
  std::vector<dim> dims;
  for (std::int64_t k = 0; k < tensor.dim(); ++k) {
    const auto size = tensor.size(k);
    const auto stride = tensor.stride(k);
    if (size == 0) return;
    if (size > 1 && stride != 0) dims.push_back({size, stride});
  }
  // Fold the innermost dims that extend one contiguous run; the rest enumerate run starts.
  auto outer = dims;
  std::stable_sort(outer.begin(), outer.end(), [](const dim& a, const dim& b) { return a.stride > b.stride; });
  std::int64_t run = 1;
  while (!outer.empty() && outer.back().stride == run) {
    run *= outer.back().size;
    outer.pop_back();
  }
  std::size_t runs = 1;
  for (const auto& d : outer) runs *= static_cast<std::size_t>(d.size);
  if (runs > max_runs) {
    std::int64_t extent = 0;
    for (const auto& d : dims) extent += (d.size - 1) * d.stride;
    out.push_back({base, static_cast<std::uint64_t>((extent + 1) * elem)});
    return;
  }
  std::int64_t first = 0;
  std::int64_t count = 0;
  for (const auto start : run_starts(outer)) {
    if (count != 0 && start <= first + count) {
      count = std::max(count, start + run - first);
      continue;
    }
    if (count != 0) out.push_back({base + static_cast<std::uint64_t>(first * elem), static_cast<std::uint64_t>(count * elem)});
    first = start;
    count = run;
  }
  out.push_back({base + static_cast<std::uint64_t>(first * elem), static_cast<std::uint64_t>(count * elem)});
}

}  // namespace streamsafe::python
