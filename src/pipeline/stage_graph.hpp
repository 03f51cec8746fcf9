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

/// An input the stage waits for when its body first asks for it (stage_context::buffer), so that
/// work enqueued before that point overlaps the producer: an edge, or a signal of the producer.
struct lazy_input {
  std::size_t buffer = 0;
  std::size_t edge = host_side;    // host_side: ordered by `signal` instead
  std::size_t signal = host_side;
};

struct stage_node {
  std::vector<std::size_t> eager;    // edges waited before the body, latest stage first
  std::vector<lazy_input> inputs;
  std::vector<std::size_t> records;  // edges this stage records after its body
  /// Stages whose batch i-depth must be done before this stage of batch i rewrites its per-slot
  /// outputs (the slot fence), latest stage first.
  std::vector<std::size_t> fence;
  std::vector<std::size_t> buffers;  // every buffer the stage may touch
  std::vector<std::size_t> publishes;
  std::vector<std::size_t> waits_for;
};

struct stage_graph {
  std::vector<buffer_node> buffers;
  std::vector<edge> edges;
  std::vector<stage_node> stages;
  std::vector<std::string> signals;
  std::vector<std::vector<std::size_t>> signal_buffers;  // [signal]: the buffers it covers
  std::vector<std::size_t> publisher;                     // [signal]: its stage
  std::size_t staging = host_side;          // buffer index of the staging buffer
  std::vector<std::size_t> result_writers;  // stages with pinned per-slot outputs (host-read)

  [[nodiscard]] std::size_t find_buffer(std::string_view name) const;  // host_side when absent
};

/// Throws usage_error naming the stage and what is wrong.
[[nodiscard]] stage_graph build_graph(const pipeline_spec& spec);

}  // namespace streamsafe::pipeline::detail
