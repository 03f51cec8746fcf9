// The device a trace replay runs on, for `streamsafe replay` and the replay benchmark alike.
#pragma once

#include <string>
#include <vector>

#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/device.hpp"

namespace streamsafe::demo {

/// `backend` "cuda": device 0. "sim": host memory of twice the trace's peak live bytes plus
/// 1 GiB; `busy` runs its streams on threads (sim_mode::threaded), so that busy work really runs
/// beside the host and a synchronization waits for it. Throws usage_error for another backend.
[[nodiscard]] Device replay_device(const std::string& backend, const std::vector<trace_event>& events, bool busy);

}  // namespace streamsafe::demo
