// A pipeline with the sync stage, one per sim rank: backward (writes each bucket of the flat
// gradient buffer with the rank's values, then publishes it, in the plan's order), sync (the comm
// stage), step (checks that it reads the sum over the ranks, and adds it to the shared weights).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "../collectives/sim_ranks.hpp"
#include "streamsafe/pipeline/collectives/sync_stage.hpp"
#include "streamsafe/pipeline/pipeline.hpp"

namespace streamsafe::hazard {
class tracker;
}

namespace streamsafe::testing {

/// What ran, in the order the sim ran it, on one rank: "backward <id>" when a bucket's gradients
/// were written, "reduced <id>" when its all-reduce had finished on the comm stream.
class run_log {
 public:
  void note(std::string what);
  [[nodiscard]] std::vector<std::string> entries() const;
  /// The position of `what`; entries().size() when absent.
  [[nodiscard]] std::size_t position(const std::string& what) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> entries_;
};

struct sync_options {
  sim_pacing backward = sim_pacing::normal;
  sim_pacing sync = sim_pacing::normal;
  std::size_t batches = 6;
  /// Threaded sim: backward's bucket 1 waits (up to 20 s) until bucket 0 has been all-reduced.
  bool gate_after_bucket0 = false;
};

/// One rank's view of the run.
struct rank_result {
  std::vector<std::size_t> wrong_sums;  // [batch]: gradient values the step read that were not the sum
  std::vector<float> weights;           // the shared weights after the last batch
  std::vector<std::string> order;       // the run_log's entries of the last batch
  bool gate_gave_up = false;
  std::size_t loop_allocations = 0;
};

/// Runs the sync pipeline on `device` as rank comm.rank() of `ranks`, with `plan`; `hazards`
/// (optional) watches it.
rank_result run_sync_rank(Device& device, collectives::communicator& comm, const collectives::bucket_plan& plan,
                          int ranks, const sync_options& options, hazard::tracker* hazards = nullptr);

/// The weights every rank must end with: at each float of a bucket, the sum over the batches of
/// the sum over the ranks.
[[nodiscard]] float expected_weight(int ranks, std::size_t index, std::size_t batches);

}  // namespace streamsafe::testing
