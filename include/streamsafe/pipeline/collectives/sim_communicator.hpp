// The sim backend of communicator: several sim devices in one process act as ranks, and an
// all-reduce is a sim kernel on each rank's stream that meets the other ranks' kernels in a
// shared group, checks their order, sums, and writes the sum back to every rank's buffer.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "streamsafe/pipeline/collectives/communicator.hpp"

namespace streamsafe::collectives {

namespace detail {
class SimRendezvous;
}

struct sim_group_options {
  /// How long a rank's collective waits for the other ranks before it ends with an error
  /// naming the collective and the ranks that did not arrive (a rank that stopped, or issued
  /// fewer collectives).
  std::chrono::milliseconds timeout{30000};
};

/// The shared meeting point of `size` sim ranks. Thread-safe. After a collective fails (order
/// mismatch, timeout) the group is aborted: every later collective of every rank fails at once
/// with the first failure's text, so no rank waits for a peer that will never come.
class sim_group {
 public:
  explicit sim_group(int size, sim_group_options options = {});
  [[nodiscard]] int size() const;
  /// Empty until a collective failed; then the first failure's text.
  [[nodiscard]] std::string abort_reason() const;
  [[nodiscard]] detail::SimRendezvous& rendezvous() const { return *rendezvous_; }
  /// Unique among the process's groups, never reused (communicator::group_id).
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }

 private:
  std::shared_ptr<detail::SimRendezvous> rendezvous_;
  std::uint64_t id_;
};

/// Rank `rank` of `group`. Its collectives run on sim streams only (usage_error otherwise).
///
/// Threads and modes: the collective blocks the thread that runs it until every rank's kernel
/// for it has arrived. In sim_mode::threaded that is the stream's worker, so ranks may be
/// driven from any threads. In sim_mode::deterministic ops run on the host thread that waits,
/// so each rank needs its own host thread that waits on its streams; ranks driven from one
/// host thread cannot meet, and the first collective ends with the timeout error.
class sim_communicator final : public communicator {
 public:
  sim_communicator(std::shared_ptr<sim_group> group, int rank);

  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override;
  [[nodiscard]] std::string name() const override;
  void begin_step(std::uint64_t step) override { issued_.begin(step); }
  void all_reduce(void* buffer, std::size_t count, data_type type, reduce_op op, StreamRef stream,
                  const collective_label& label) override;
  [[nodiscard]] const collective_sequence& issued() const override { return issued_; }
  [[nodiscard]] std::uint64_t group_id() const override { return group_->id(); }

 private:
  std::shared_ptr<sim_group> group_;
  int rank_;
  std::uint64_t next_index_ = 0;  // the rendezvous slot of the next collective
  collective_sequence issued_;
};

}  // namespace streamsafe::collectives
