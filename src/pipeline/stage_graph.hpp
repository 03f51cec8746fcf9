// The pipeline's declarations resolved into a graph: who writes and reads each buffer, which
// events each stage waits for and records, and what each slot fence covers. Built and validated
// once, at construction; the run loop only walks it.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "streamsafe/pipeline/pipeline.hpp"

namespace streamsafe::pipeline::detail {

inline constexpr std::size_t host_side = std::numeric_limits<std::size_t>::max();

struct buffer_node {
  buffer_spec spec;
  std::size_t writer = host_side;    // a stage index, or host_side for the staging buffer
  std::vector<std::size_t> readers;  // stage indices
};

/// `to`'s stream waits for the event `from` records after its body. previous_batch: `to` in
/// batch i waits for `from` in batch i-1 (a shared buffer), else both in the same batch.
struct edge {
  std::size_t from = 0;
  std::size_t to = 0;
  bool previous_batch = false;
};

struct stage_node {
  std::vector<std::size_t> waits;    // edges this stage waits for (implied ones left out)
  std::vector<std::size_t> records;  // edges this stage records after its body
  /// Stages whose batch i-depth must be done before this stage of batch i rewrites its per-slot
  /// outputs (the slot fence; implied ones left out).
  std::vector<std::size_t> fence;
  std::vector<std::size_t> buffers;  // declared inputs and outputs
  std::vector<std::size_t> publishes;
  std::vector<std::size_t> waits_for;
  std::vector<bool> before;  // before[m]: stage m's work of the same batch is ordered before this one's end
};

struct stage_graph {
  std::vector<buffer_node> buffers;
  std::vector<edge> edges;
  std::vector<stage_node> stages;
  std::vector<std::string> signals;
  std::vector<std::vector<std::size_t>> signal_buffers;  // [signal]: the buffers it covers
  std::size_t staging = host_side;          // buffer index of the staging buffer
  std::vector<std::size_t> result_writers;  // stages with pinned per-slot outputs (host-read)

  [[nodiscard]] std::size_t find_buffer(std::string_view name) const;  // host_side when absent
};

/// Throws usage_error naming the stage and what is wrong.
[[nodiscard]] stage_graph build_graph(const pipeline_spec& spec);

/// The fewest of `stages` whose done events cover them all: a stage ordered before another one
/// of the list is left out.
[[nodiscard]] std::vector<std::size_t> without_implied(const stage_graph& graph, std::vector<std::size_t> stages);

}  // namespace streamsafe::pipeline::detail
