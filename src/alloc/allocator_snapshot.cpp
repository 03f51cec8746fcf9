#include "alloc/allocator_snapshot.hpp"

#include <mutex>
#include <sstream>
#include <utility>

#include "runtime/stream_impl.hpp"

namespace streamsafe::detail {

namespace {

const char* state_name(block_state state) {
  switch (state) {
    case block_state::free: return "free";
    case block_state::live: return "live";
    case block_state::pending: return "pending_free";
  }
  return "?";
}

void write_counter(std::ostream& out, const char* name, const stat_counter& c) {
  out << '"' << name << "\":{\"current\":" << c.current << ",\"peak\":" << c.peak << ",\"allocated\":" << c.allocated
      << ",\"freed\":" << c.freed << '}';
}

void write_stats(std::ostream& out, const allocator_stats& s) {
  const std::pair<const char*, const stat_counter*> counters[] = {
      {"allocated_bytes", &s.allocated_bytes}, {"active_bytes", &s.active_bytes},
      {"requested_bytes", &s.requested_bytes}, {"reserved_bytes", &s.reserved_bytes},
      {"allocation", &s.allocation},           {"active", &s.active},
      {"segment", &s.segment},
  };
  out << '{';
  for (const auto& [name, counter] : counters) {
    write_counter(out, name, *counter);
    out << ',';
  }
  out << "\"num_alloc_retries\":" << s.num_alloc_retries << ",\"num_ooms\":" << s.num_ooms
      << ",\"num_sync_all_streams\":" << s.num_sync_all_streams << ",\"num_device_alloc\":" << s.num_device_alloc
      << ",\"num_device_free\":" << s.num_device_free << ",\"num_cross_stream_reuses\":" << s.num_cross_stream_reuses << ",\"num_free_fences\":" << s.num_free_fences
      << ",\"pending_free_bytes\":" << s.pending_free_bytes << ",\"pending_free_blocks\":" << s.pending_free_blocks
      << ",\"num_host_syncs\":" << s.num_host_syncs << ",\"device_calls\":" << s.device_calls.total()
      << ",\"num_plan_activations\":" << s.num_plan_activations << ",\"num_plan_derailments\":" << s.num_plan_derailments
      << ",\"num_planned_allocations\":" << s.num_planned_allocations << ",\"plan_arena_bytes\":" << s.plan_arena_bytes
      << '}';
}

void write_segment(std::ostream& out, const segment& s, stream_id stream) {
  out << "{\"address\":" << s.address << ",\"size\":" << s.size << ",\"mapped_bytes\":" << s.mapped_bytes
      << ",\"stream\":" << static_cast<std::uint64_t>(stream) << ",\"pool\":\""
      << (s.kind == pool_kind::small ? "small" : "large") << "\",\"expandable\":" << (s.expandable ? "true" : "false")
      << ",\"blocks\":[";
  for (const block* b = s.first; b != nullptr; b = b->next) {
    out << "{\"address\":" << b->address << ",\"size\":" << b->size << ",\"requested\":" << b->requested
        << ",\"state\":\"" << (b->lent ? "lent" : state_name(b->state)) << "\",\"mapped\":" << (b->mapped ? "true" : "false") << '}'
        << (b->next != nullptr ? "," : "");
  }
  out << "]}";
}

/// A range of the repeat plan's arena as one segment of pool "plan": its live blocks (each with
/// its stream). A range the pools lent lies in one of their segments, where it shows as "lent".
void write_arena(std::ostream& out, const iteration_plan::arena_view& arena) {
  out << "{\"address\":" << arena.base << ",\"size\":" << arena.bytes << ",\"mapped_bytes\":" << arena.bytes
      << ",\"pool\":\"plan\",\"lent\":" << (arena.lent ? "true" : "false") << ",\"expandable\":true,\"blocks\":[";
  for (std::size_t i = 0; i < arena.live.size(); ++i) {
    const block_info& b = arena.live[i];
    out << (i == 0 ? "" : ",") << "{\"address\":" << reinterpret_cast<std::uintptr_t>(b.base) << ",\"size\":" << b.size
        << ",\"requested\":" << b.requested << ",\"stream\":" << static_cast<std::uint64_t>(b.stream)
        << ",\"state\":\"live\",\"mapped\":true}";
  }
  out << "]}";
}

}  // namespace

std::string snapshot_json(std::string_view device_name, const std::vector<stream_pool*>& pools,
                          const std::vector<iteration_plan::arena_view>& arena, const allocator_stats& totals) {
  std::ostringstream out;
  out << "{\"device\":\"" << device_name << "\",\"segments\":[";
  bool first = true;
  for (const stream_pool* pool : pools) {
    std::lock_guard lock(pool->mutex);
    for (const segment* s : pool->segments()) {
      if (!first) out << ',';
      first = false;
      write_segment(out, *s, pool->stream().id());
    }
  }
  for (const iteration_plan::arena_view& range : arena) {
    if (!first) out << ',';
    first = false;
    write_arena(out, range);
  }
  out << "],\"stats\":";
  write_stats(out, totals);
  out << '}';
  return out.str();
}

}  // namespace streamsafe::detail
