// What a pipeline keeps between runs: its validated graph, its streams and its event pool.
#pragma once

#include <vector>

#include "stage_graph.hpp"
#include "streamsafe/event_pool.hpp"
#include "streamsafe/pipeline/pipeline.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::pipeline {

struct pipeline::state {
  state(const Device& device, caching_allocator& allocator, pipeline_spec spec, hazard::tracker* hazards);

  Device device;
  caching_allocator& allocator;
  pipeline_spec spec;
  detail::stage_graph graph;
  std::vector<Stream> streams;  // one per stage, named for it
  EventPool events;             // every run's hand-off, fence and signal events
  hazard::tracker* hazards;
  bool running = false;
};

}  // namespace streamsafe::pipeline
