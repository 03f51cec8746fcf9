// Idle gaps inside a GPU stream's timeline and why each happened, with the evidence.
//
// A gap is the time between the end of one work op (kernel, memcpy, memset) on a stream and the
// start of the next one there, when it is at least gap_options::min_gap_us. Causes, tried in order:
//  - event_wait:     the next op waited for an event recorded on another stream after op Y. From a
//                    declared dependency (a wait slice between the two ops), or inferred: the host
//                    called cudaStreamWaitEvent before launching the op, the op was already queued,
//                    and it started within release_tolerance_us of Y's end.
//  - host_sync:      the op was launched only after the stream drained (and started within
//                    release_tolerance_us of its launch returning), because the launching
//                    thread sat in cudaDeviceSynchronize / cudaStreamSynchronize /
//                    cudaEventSynchronize during the gap, or in a copy call that blocked (a
//                    pageable copy is synchronous); the call covering most of the delay is named.
//  - launch_bound:   launched after the stream drained, and the launching thread spent at least
//                    half of that time inside CUDA API calls: the host cannot launch fast enough.
//  - nothing_queued: launched after the stream drained while the host was doing other work.
//  - unexplained:    the op was queued in time (or waited long after its launch) and no dependency
//                    explains the delay (the evidence
//                    names an op on another stream that ended just before, when there is one: an
//                    implicit dependency such as the legacy default stream's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "streamsafe/monitor/trace.hpp"

namespace streamsafe::monitor {

enum class gap_cause : std::uint8_t { event_wait, host_sync, launch_bound, nothing_queued, unexplained };

[[nodiscard]] std::string_view to_string(gap_cause cause);

/// How an event_wait gap's dependency is known.
enum class wait_evidence : std::uint8_t { none, declared, inferred };

struct idle_gap {
  stream_key stream;
  double begin_us = 0;  // end of before_op
  double end_us = 0;    // start of after_op
  std::size_t before_op = 0;  // indices into trace::ops
  std::size_t after_op = 0;
  gap_cause cause = gap_cause::unexplained;
  std::optional<std::size_t> producer_op;  // the op on another stream whose end released after_op
  std::optional<std::size_t> host_call;    // the sync call (host_sync) or the launch (launch_bound, nothing_queued)
  double host_api_fraction = 0;            // share of the launch delay spent in CUDA API calls
  wait_evidence wait = wait_evidence::none;  // event_wait only: how the dependency is known
  [[nodiscard]] double length_us() const { return end_us - begin_us; }
};

struct gap_options {
  double min_gap_us = 1.0;            // shorter gaps are scheduling noise
  double release_tolerance_us = 20.0;  // how soon after a producer ends a released op must start
};

/// Every idle gap of every stream, in (stream, time) order.
[[nodiscard]] std::vector<idle_gap> find_idle_gaps(const trace& t, const gap_options& options = {});

/// One sentence of evidence for a gap, naming ops, streams, calls and times (relative to `origin_us`).
[[nodiscard]] std::string describe(const trace& t, const idle_gap& gap, double origin_us);

}  // namespace streamsafe::monitor
