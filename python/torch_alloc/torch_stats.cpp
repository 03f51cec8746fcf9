#include "torch_stats.hpp"

#include <array>

namespace streamsafe::torch_alloc {

namespace {

// Spelt out rather than built: the C ABI hands these out as static strings.
constexpr std::array<const char*, 33> keys = {
    "allocated_bytes.all.current", "allocated_bytes.all.peak", "allocated_bytes.all.allocated", "allocated_bytes.all.freed",
    "active_bytes.all.current",    "active_bytes.all.peak",    "active_bytes.all.allocated",    "active_bytes.all.freed",
    "requested_bytes.all.current", "requested_bytes.all.peak", "requested_bytes.all.allocated", "requested_bytes.all.freed",
    "reserved_bytes.all.current",  "reserved_bytes.all.peak",  "reserved_bytes.all.allocated",  "reserved_bytes.all.freed",
    "allocation.all.current",      "allocation.all.peak",      "allocation.all.allocated",      "allocation.all.freed",
    "active.all.current",          "active.all.peak",          "active.all.allocated",          "active.all.freed",
    "segment.all.current",         "segment.all.peak",         "segment.all.allocated",         "segment.all.freed",
    "num_alloc_retries",           "num_ooms",                 "num_sync_all_streams",          "num_device_alloc",
    "num_device_free",
};

void append(std::vector<std::int64_t>& out, const stat_counter& counter) {
  out.insert(out.end(), {counter.current, counter.peak, static_cast<std::int64_t>(counter.allocated),
                         static_cast<std::int64_t>(counter.freed)});
}

}  // namespace

std::span<const char* const> torch_stat_keys() { return keys; }

std::vector<std::int64_t> torch_stat_values(const allocator_stats& stats) {
  std::vector<std::int64_t> out;
  out.reserve(keys.size());
  for (const auto* counter : {&stats.allocated_bytes, &stats.active_bytes, &stats.requested_bytes, &stats.reserved_bytes,
                              &stats.allocation, &stats.active, &stats.segment}) {
    append(out, *counter);
  }
  for (const auto count : {stats.num_alloc_retries, stats.num_ooms, stats.num_sync_all_streams, stats.num_device_alloc,
                           stats.num_device_free}) {
    out.push_back(static_cast<std::int64_t>(count));
  }
  return out;
}

}  // namespace streamsafe::torch_alloc
