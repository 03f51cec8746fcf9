// An optional hook for backends that run device work on the host (sim): when a sink is set on a
// device, each kernel, copy and fill reports when it ran. The monitor's collector uses it on sim;
// on cuda, CUPTI times the ops instead and the hook is never called.
// Cost without a sink: one relaxed atomic load per enqueue.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>

#include "streamsafe/stream.hpp"

namespace streamsafe::detail {

enum class timed_op_kind { kernel, copy, fill };

struct timed_op {
  stream_id stream{};
  timed_op_kind kind = timed_op_kind::kernel;
  std::string_view name;  // valid during the call only
  std::size_t bytes = 0;  // copy and fill
  std::chrono::steady_clock::time_point enqueued{};
  std::chrono::steady_clock::time_point begin{};
  std::chrono::steady_clock::time_point end{};
};

/// Called on the thread that ran the op (a threaded sim worker, or the host thread in
/// deterministic mode), after the op's work returned without throwing. Must be thread-safe and
/// must not call back into streamsafe.
class OpTimingSink {
 public:
  virtual ~OpTimingSink() = default;
  virtual void on_op_ran(const timed_op& op) noexcept = 0;
  /// Read at each enqueue: false leaves the op untimed (the monitor's sampled collection).
  [[nodiscard]] virtual bool wants_ops() const noexcept { return true; }
};

}  // namespace streamsafe::detail
