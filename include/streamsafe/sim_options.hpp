// Configuration of the `sim` backend: a GPU modelled on the host, to run and test multi-stream
// code without a GPU and to reproduce races on demand.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace streamsafe {

/// How the sim backend runs the work queued on its streams.
enum class sim_mode {
  /// One thread. Queued work runs only inside the host calls that need it (synchronize, a
  /// blocking allocation, ...) and, optionally, a few seeded steps at each call (see
  /// sim_options::max_background_steps). Among the streams whose next op may run, a seeded
  /// generator picks one; the same seed gives the same interleaving, every time.
  deterministic,
  /// A worker thread per stream: real concurrency, for ThreadSanitizer and stress tests.
  threaded,
};

/// How eagerly one sim stream is run, to expose missing waits (set per stream in
/// stream_options). Ignored on the cuda backend.
enum class sim_pacing {
  normal,
  /// deterministic: the stream runs only when no other stream can;
  /// threaded: it sleeps sim_options::starve_delay before each op.
  starved,
};

struct sim_options {
  /// Bytes of simulated device memory; allocations beyond it throw out_of_memory.
  std::size_t memory_capacity = std::size_t{1} << 30;
  sim_mode mode = sim_mode::deterministic;
  /// Seeds the deterministic scheduler's choice among ready streams.
  std::uint64_t seed = 1;
  /// deterministic: at each host call that enqueues work, run a seeded number of ops in
  /// [0, max_background_steps], as a GPU runs ahead of the host. 0 keeps work lazy.
  unsigned max_background_steps = 0;
  /// threaded: the sleep before each op of a starved stream.
  std::chrono::microseconds starve_delay{2000};
};

}  // namespace streamsafe
