// A three-stage pipeline for the tests: upload (staging -> raw, H2D), scale (raw -> scaled, a
// kernel doubling each value), download (scaled -> result, pinned). Batch b's values are all
// b + 1, so a batch that read another batch's bytes, or a half-written buffer, shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "streamsafe/pipeline/pipeline.hpp"

namespace streamsafe::testing {

inline constexpr std::uint32_t mixed_values = 0xFFFFFFFFu;  // a buffer not uniformly one batch's

struct ring_options {
  std::size_t depth = 2;
  std::size_t count = 4096;  // uint32 values per buffer
  sim_pacing upload = sim_pacing::normal;
  sim_pacing scale = sim_pacing::normal;
  sim_pacing download = sim_pacing::normal;
  bool results = true;  // without: no download stage, the producer's fence bounds the ring
  std::optional<std::size_t> scale_throws_at;
  std::optional<std::size_t> producer_throws_at;
};

/// What the run saw, per batch. seen: the value the scale kernel read (sim only: its host work
/// looks at the bytes; 0 when it did not run). results: the value on_result read (0: not read).
struct ring_observations {
  explicit ring_observations(std::size_t batches) : seen(batches, 0), results(batches, 0) {}
  std::vector<std::uint32_t> seen;
  std::vector<std::uint32_t> results;
  std::vector<std::size_t> result_order;
};

/// The stages read `options` when they run (a test may change scale_throws_at between runs), so
/// it must outlive the pipeline: a temporary is refused.
[[nodiscard]] pipeline::pipeline_spec ring_spec(const ring_options& options, ring_observations& seen);
pipeline::pipeline_spec ring_spec(ring_options&& options, ring_observations& seen) = delete;

/// A training step on four stages: upload (staging -> raw), compute (raw and the shared weights ->
/// grad0, then grad1; publishes "grad0" between the two), sync (waits for "grad0" and reduces it
/// while compute still runs, then reduces grad1 after compute ends), step (the step stage: writes
/// the weights, batch b + 1 everywhere). What each kernel read, per batch (sim only):
inline constexpr std::uint32_t initial_weight = 1000;  // what the step stage's initialize writes

struct training_observations {
  explicit training_observations(std::size_t batches) : weights(batches, 0), grad0(batches, 0), reduced(batches, 0) {}
  std::vector<std::uint32_t> weights;  // compute's view of the weights: initial_weight, then b for batch b
  std::vector<std::uint32_t> grad0;    // sync's view of grad0: raw + weights
  std::vector<std::uint32_t> reduced;  // step's view of reduced0 and reduced1 (mixed if they differ)
};

struct training_options {
  std::size_t depth = 2;
  std::size_t count = 4096;
  sim_pacing compute = sim_pacing::normal;
  sim_pacing step = sim_pacing::normal;
};

[[nodiscard]] pipeline::pipeline_spec training_spec(const training_options& options, training_observations& seen);

/// Adds the staging buffer and a producer that fills it with batch_value(batch).
void add_staging(pipeline::pipeline_spec& spec, std::size_t bytes, std::optional<std::size_t> throws_at);

/// The value every element of a batch's buffers holds after upload (before scale doubles it).
[[nodiscard]] constexpr std::uint32_t batch_value(std::size_t batch) { return static_cast<std::uint32_t>(batch + 1); }

/// The one value of `values`, or mixed_values.
[[nodiscard]] std::uint32_t uniform_value(const std::uint32_t* values, std::size_t count);

}  // namespace streamsafe::testing
