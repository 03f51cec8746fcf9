// The trace model's small helpers: interning, API-name classification, time ordering.
#include "streamsafe/monitor/trace.hpp"

#include <algorithm>
#include <numeric>

namespace streamsafe::monitor {

name_id string_table::intern(std::string_view text) {
  // C++20 has no heterogeneous lookup for unordered_map without a custom hash; the key copy is
  // cheap next to parsing, and names repeat, so most calls end at the find.
  std::string key(text);
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  auto id = static_cast<name_id>(strings_.size());
  strings_.push_back(key);
  ids_.emplace(std::move(key), id);
  return id;
}

call_kind classify_call(std::string_view api) {
  struct rule {
    std::string_view prefix;
    call_kind kind;
  };
  // Order matters: the longer names must come before their prefixes.
  static constexpr rule rules[] = {
      {"cudaLaunch", call_kind::launch},          {"cuLaunch", call_kind::launch},
      {"cudaGraphLaunch", call_kind::launch},     {"cudaMemcpy", call_kind::memcpy},
      {"cuMemcpy", call_kind::memcpy},            {"cudaMemset", call_kind::memset},
      {"cuMemset", call_kind::memset},            {"cudaEventCreate", call_kind::event_create},
      {"cuEventCreate", call_kind::event_create}, {"cudaEventRecord", call_kind::event_record},
      {"cuEventRecord", call_kind::event_record}, {"cudaEventElapsedTime", call_kind::event_elapsed_time},
      {"cuEventElapsedTime", call_kind::event_elapsed_time},
      {"cudaStreamWaitEvent", call_kind::stream_wait_event},
      {"cuStreamWaitEvent", call_kind::stream_wait_event},
      {"cudaEventSynchronize", call_kind::event_sync},   {"cuEventSynchronize", call_kind::event_sync},
      {"cudaStreamSynchronize", call_kind::stream_sync}, {"cuStreamSynchronize", call_kind::stream_sync},
      {"cudaDeviceSynchronize", call_kind::device_sync}, {"cuCtxSynchronize", call_kind::device_sync},
  };
  for (const auto& r : rules) {
    if (api.starts_with(r.prefix)) return r.kind;
  }
  return call_kind::other;
}

namespace {
template <typename T>
void stable_sort_by_ts(std::vector<T>& items) {
  std::stable_sort(items.begin(), items.end(), [](const T& a, const T& b) { return a.ts_us < b.ts_us; });
}
}  // namespace

void sort_by_time(trace& t) {
  std::vector<std::size_t> order(t.ops.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return t.ops[a].ts_us < t.ops[b].ts_us; });
  std::vector<std::size_t> new_index(order.size());
  std::vector<gpu_op> sorted;
  sorted.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = i;
    sorted.push_back(t.ops[order[i]]);
  }
  t.ops = std::move(sorted);
  for (auto& dep : t.dependencies) {
    dep.record_op = new_index[dep.record_op];
    dep.wait_op = new_index[dep.wait_op];
  }
  stable_sort_by_ts(t.calls);
  stable_sort_by_ts(t.annotations);
}

std::string_view to_string(op_kind kind) {
  switch (kind) {
    case op_kind::kernel: return "kernel";
    case op_kind::memcpy: return "memcpy";
    case op_kind::memset: return "memset";
    case op_kind::sync: return "sync";
    case op_kind::event_record: return "event_record";
  }
  return "?";
}

std::string_view to_string(memory_kind kind) {
  switch (kind) {
    case memory_kind::unknown: return "Unknown";
    case memory_kind::pageable: return "Pageable";
    case memory_kind::pinned: return "Pinned";
    case memory_kind::device: return "Device";
    case memory_kind::managed: return "Managed";
    case memory_kind::array: return "Array";
  }
  return "?";
}

}  // namespace streamsafe::monitor
