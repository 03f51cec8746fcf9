// Splits a run into iterations (training steps, inference batches), so figures can be given per
// iteration and misuse "inside a loop" can be told from a one-off.
//
// Markers, in order of preference: host annotations named by the user (`marker`), PyTorch's
// ProfilerStep#N ranges, and otherwise an inferred marker: the host annotation that repeats most
// often (ties: the one that starts first), when it repeats at least twice. Iteration i runs from
// the start of marker i to the start of marker i+1 (the last one to the end of the trace), in
// host time. A GPU op belongs to the iteration in which its launching call was made (its own
// start time when the launch is unknown).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "streamsafe/monitor/trace.hpp"

namespace streamsafe::monitor {

enum class iteration_source : std::uint8_t { user_marker, profiler_step, inferred, none };

[[nodiscard]] std::string_view to_string(iteration_source source);

struct iteration {
  double begin_us = 0;  // host time
  double end_us = 0;
  std::vector<std::size_t> ops;    // indices into trace::ops
  std::vector<std::size_t> calls;  // indices into trace::calls
};

struct iteration_plan {
  iteration_source source = iteration_source::none;
  std::string marker;  // the annotation name (prefix for ProfilerStep#)
  std::vector<iteration> iterations;
};

/// `marker`: an annotation name chosen by the user; empty to use ProfilerStep# or infer one.
[[nodiscard]] iteration_plan find_iterations(const trace& t, std::string_view marker = {});

}  // namespace streamsafe::monitor
