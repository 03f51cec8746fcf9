// What a stage body sees of one batch: its declared buffers of the batch's slot, its stream, and
// calls that enqueue work through the hazard tracker when the pipeline has one (so a report names
// the stage: its stream carries the stage's name).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "streamsafe/kernel.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::collectives {
class communicator;
struct collective_label;
}  // namespace streamsafe::collectives

namespace streamsafe::pipeline {

namespace detail {
class run_session;
}

using byte_span = std::span<std::byte>;
using const_byte_span = std::span<const std::byte>;

/// Valid only during the stage body that received it, on that thread. Every call throws
/// usage_error naming the stage and the batch when it breaks the stage's declaration.
class stage_context {
 public:
  [[nodiscard]] std::size_t batch() const noexcept { return batch_; }
  [[nodiscard]] std::size_t slot() const noexcept { return slot_; }
  [[nodiscard]] const std::string& stage() const noexcept;
  [[nodiscard]] StreamRef stream() const noexcept;

  /// A buffer the stage declared (input, output, or covered by a signal it waits for) in this
  /// batch's slot (shared buffers: the one copy). Asking for an input is what orders the stage
  /// after its producer: the stream waits there (once per batch, and not when already ordered), so
  /// work enqueued before overlaps the producer. Access buffers only through this call. Any other
  /// name throws usage_error: touching what was not declared would be unordered.
  [[nodiscard]] byte_span buffer(std::string_view name) const;
  template <typename T>
  [[nodiscard]] std::span<T> buffer_as(std::string_view name) const {
    const byte_span bytes = buffer(name);
    return {reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)};
  }

  /// Enqueues `work` on the stage's stream. `reads` and `writes` are the bytes it touches: the
  /// hazard tracker (when attached) checks them, so a kernel that touches a buffer the stage did
  /// not declare is reported against this stage.
  void launch(const kernel& work, std::initializer_list<const_byte_span> reads,
              std::initializer_list<const_byte_span> writes);
  /// Enqueues a copy of the whole of buffer `src` into buffer `dst` (same size, both declared).
  void copy(std::string_view dst, std::string_view src);

  /// Records this slot's event for `signal` (declared in `publishes`) on the stage's stream now:
  /// a later stage's wait_for(signal) orders its next work after the work enqueued so far.
  void publish(std::string_view signal);
  /// The stage's stream waits for `signal` (declared in `waits_for`) of this batch: the earlier
  /// stage has published it, since stages are enqueued in order. buffer() of a covered buffer
  /// does this itself. Does not block the host.
  void wait_for(std::string_view signal);

  /// The sync stage's collective (collectives/sync_stage.hpp): waits for `signal` (declared in
  /// `waits_for`) only, then enqueues through `comm` on the stage's stream an in-place float32
  /// sum of `bytes` bytes at `offset` of `buffer`, a buffer the signal covers. Other signals on
  /// the same buffer are not waited for, so bucket k is reduced while the publisher still writes
  /// bucket k+1; the body must reduce only the bytes the signal's publisher had written when it
  /// published. The hazard tracker (when attached) sees the collective as a read and a write of
  /// that range on this stream. Later stages that read the buffer are ordered after this stage by
  /// the step stage's wait (a non-step stage reading the buffer would see the writer's bytes, not
  /// the sum). Throws usage_error for a range outside the buffer or a buffer the signal does not
  /// cover; `comm`'s own errors (an order mismatch) propagate.
  void all_reduce(collectives::communicator& comm, std::string_view signal, std::string_view buffer, std::size_t offset,
                  std::size_t bytes, const collectives::collective_label& label);

  /// Blocks the host until the stage's work so far is done: a host sync the user asked for,
  /// counted in run_stats::requested_host_syncs.
  void synchronize();

 private:
  friend class detail::run_session;
  stage_context(detail::run_session& session, std::size_t stage, std::size_t batch, std::size_t slot) noexcept
      : session_(session), stage_(stage), batch_(batch), slot_(slot) {}
  detail::run_session& session_;
  std::size_t stage_;
  std::size_t batch_;
  std::size_t slot_;
};

}  // namespace streamsafe::pipeline
