// Writes a trace as Chrome trace event JSON in PyTorch-profiler (Kineto) conventions, which
// Perfetto and chrome://tracing open and trace_reader.hpp reads back to the same model:
// pid = device for GPU work (tid = stream), pid = host_pid for host calls (tid = thread); X slices
// with ts/dur in microseconds and Kineto's categories and args; M metadata naming the processes
// and threads; and flow events (s/f, category "stream_wait") from each event record to the wait
// it satisfied: declared dependencies, plus the waits inferred by idle-gap analysis when given.
#pragma once

#include <cstdint>
#include <ostream>
#include <span>

#include "streamsafe/monitor/idle_gaps.hpp"
#include "streamsafe/monitor/trace.hpp"

namespace streamsafe::monitor {

/// The pid the exporter gives host threads (GPU devices use their ordinal).
inline constexpr std::int64_t host_pid = 1'000'000;

void write_chrome_trace(std::ostream& out, const trace& t, std::span<const idle_gap> gaps = {});

}  // namespace streamsafe::monitor
