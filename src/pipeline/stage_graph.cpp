#include "stage_graph.hpp"

#include <algorithm>
#include <functional>

namespace streamsafe::pipeline::detail {

namespace {

[[noreturn]] void refuse(const std::string& stage, const std::string& what) {
  throw usage_error("pipeline: stage '" + stage + "': " + what);
}

std::size_t index_of(const std::vector<std::string>& names, std::string_view name) {
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? host_side : static_cast<std::size_t>(it - names.begin());
}

void latest_first(std::vector<std::size_t>& stages) {
  std::sort(stages.begin(), stages.end(), std::greater<>());
  stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
}

void add_buffer(stage_graph& graph, const buffer_spec& spec, std::size_t writer, const std::string& who) {
  if (spec.name.empty() || spec.bytes == 0) refuse(who, "a buffer needs a name and a size");
  if (graph.find_buffer(spec.name) != host_side) refuse(who, "buffer '" + spec.name + "' has two writers");
  graph.buffers.push_back(buffer_node{spec, writer, {}});
}

std::size_t add_edge(stage_graph& graph, edge wanted) {
  for (std::size_t e = 0; e < graph.edges.size(); ++e) {
    const edge& have = graph.edges[e];
    if (have.from == wanted.from && have.to == wanted.to && have.previous_batch == wanted.previous_batch) return e;
  }
  graph.edges.push_back(wanted);
  graph.stages[wanted.from].records.push_back(graph.edges.size() - 1);
  return graph.edges.size() - 1;
}

void add_eager(stage_graph& graph, std::size_t from, std::size_t to) {
  const std::size_t e = add_edge(graph, {from, to, false});
  std::vector<std::size_t>& eager = graph.stages[to].eager;
  if (std::find(eager.begin(), eager.end(), e) == eager.end()) eager.push_back(e);
}

// A stage reads `b`: a per-slot buffer from an earlier stage of the batch, or a shared one from
// its later writer of the previous batch (the writer then waits for this reader of its batch).
void connect_input(stage_graph& graph, const pipeline_spec& spec, std::size_t stage, std::size_t b) {
  buffer_node& buffer = graph.buffers[b];
  buffer.readers.push_back(stage);
  graph.stages[stage].buffers.push_back(b);
  if (buffer.writer == host_side) return;  // staging: the producer's fence orders it
  const std::string& name = spec.stages[stage].name;
  if (buffer.spec.scope == buffer_scope::per_slot) {
    if (buffer.writer >= stage) refuse(name, "reads '" + buffer.spec.name + "', written by a later stage");
    graph.stages[stage].inputs.push_back({b, add_edge(graph, {buffer.writer, stage, false})});
    return;
  }
  if (buffer.writer <= stage) refuse(name, "reads shared '" + buffer.spec.name + "': its writer must come after its readers");
  graph.stages[stage].inputs.push_back({b, add_edge(graph, {buffer.writer, stage, true})});
  add_eager(graph, stage, buffer.writer);
}

void publish_signals(stage_graph& graph, const pipeline_spec& spec, std::size_t k) {
  for (const signal_spec& signal : spec.stages[k].publishes) {
    if (signal.name.empty() || index_of(graph.signals, signal.name) != host_side) {
      refuse(spec.stages[k].name, "signal '" + signal.name + "' is unnamed or published twice");
    }
    graph.signals.push_back(signal.name);
    graph.publisher.push_back(k);
    std::vector<std::size_t>& covered = graph.signal_buffers.emplace_back();
    for (const std::string& name : signal.buffers) {
      const std::size_t b = graph.find_buffer(name);
      if (b == host_side || graph.buffers[b].writer != k || graph.buffers[b].spec.scope != buffer_scope::per_slot) {
        refuse(spec.stages[k].name, "signal '" + signal.name + "' covers '" + name + "', not a per-slot output of the stage");
      }
      covered.push_back(b);
    }
    graph.stages[k].publishes.push_back(graph.signals.size() - 1);
  }
}

// A stage that waits for a signal reads the buffers it covers, ordered by the signal; it is a
// reader for the slot fence too.
void connect_signals(stage_graph& graph, const pipeline_spec& spec) {
  for (std::size_t k = 0; k < spec.stages.size(); ++k) publish_signals(graph, spec, k);
  for (std::size_t k = 0; k < spec.stages.size(); ++k) {
    for (const std::string& signal : spec.stages[k].waits_for) {
      const std::size_t s = index_of(graph.signals, signal);
      if (s == host_side || graph.publisher[s] >= k) {
        refuse(spec.stages[k].name, "waits for '" + signal + "', which no earlier stage publishes");
      }
      graph.stages[k].waits_for.push_back(s);
      for (const std::size_t b : graph.signal_buffers[s]) {
        graph.buffers[b].readers.push_back(k);
        graph.stages[k].buffers.push_back(b);
        graph.stages[k].inputs.push_back({b, host_side, s});
      }
    }
  }
}

void add_fences(stage_graph& graph) {
  for (std::size_t k = 0; k < graph.stages.size(); ++k) {
    std::vector<std::size_t>& users = graph.stages[k].fence;
    for (const buffer_node& buffer : graph.buffers) {
      if (buffer.writer != k || buffer.spec.scope != buffer_scope::per_slot) continue;
      for (const std::size_t r : buffer.readers) {
        if (r != k) users.push_back(r);
      }
    }
    latest_first(users);
  }
}

void add_step_edges(stage_graph& graph, const pipeline_spec& spec) {
  for (std::size_t k = 0; k < spec.stages.size(); ++k) {
    if (!spec.stages[k].step) continue;
    if (k + 1 != spec.stages.size()) refuse(spec.stages[k].name, "the step stage must be the last stage");
    for (std::size_t m = 0; m < k; ++m) add_eager(graph, m, k);
  }
}

void order_eager_waits(stage_graph& graph) {
  for (stage_node& stage : graph.stages) {
    std::sort(stage.eager.begin(), stage.eager.end(),
              [&](std::size_t a, std::size_t b) { return graph.edges[a].from > graph.edges[b].from; });
  }
}

}  // namespace

std::size_t stage_graph::find_buffer(std::string_view name) const {
  for (std::size_t b = 0; b < buffers.size(); ++b) {
    if (buffers[b].spec.name == name) return b;
  }
  return host_side;
}

stage_graph build_graph(const pipeline_spec& spec) {
  if (spec.depth == 0) throw usage_error("pipeline: depth must be at least 1");
  if (spec.stages.empty()) throw usage_error("pipeline: no stages");
  if ((spec.staging.bytes != 0) != static_cast<bool>(spec.producer)) {
    throw usage_error("pipeline: a staging buffer and a producer go together");
  }
  stage_graph graph;
  graph.stages.resize(spec.stages.size());
  if (spec.staging.bytes != 0) {
    buffer_spec staging = spec.staging;
    staging.place = memory_place::pinned;
    staging.scope = buffer_scope::per_slot;
    add_buffer(graph, staging, host_side, "producer");
    graph.staging = 0;
  }
  std::vector<std::string> names;
  for (std::size_t k = 0; k < spec.stages.size(); ++k) {
    const stage_spec& stage = spec.stages[k];
    if (stage.name.empty() || index_of(names, stage.name) != host_side) refuse(stage.name, "stage names must be unique and not empty");
    if (!stage.body) refuse(stage.name, "has no body");
    names.push_back(stage.name);
    for (const buffer_spec& out : stage.outputs) {
      add_buffer(graph, out, k, stage.name);
      graph.stages[k].buffers.push_back(graph.buffers.size() - 1);
      if (out.place == memory_place::pinned && out.scope == buffer_scope::per_slot) graph.result_writers.push_back(k);
    }
  }
  for (std::size_t k = 0; k < spec.stages.size(); ++k) {
    for (const std::string& input : spec.stages[k].inputs) {
      const std::size_t b = graph.find_buffer(input);
      if (b == host_side) refuse(spec.stages[k].name, "reads '" + input + "', which no stage writes");
      connect_input(graph, spec, k, b);
    }
  }
  add_step_edges(graph, spec);
  connect_signals(graph, spec);
  add_fences(graph);
  order_eager_waits(graph);
  latest_first(graph.result_writers);
  return graph;
}

}  // namespace streamsafe::pipeline::detail
