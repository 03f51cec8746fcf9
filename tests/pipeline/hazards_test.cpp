// Safe by construction, checked: the hazard engine watches pipelines run and finds nothing, in
// report and enforce modes; a stage that touches what it did not declare is reported against it.
#include <gtest/gtest.h>

#include "backends.hpp"
#include "ring_pipeline.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/hazard/report_text.hpp"
#include "streamsafe/hazard/tracker.hpp"

namespace streamsafe::testing {

namespace {

constexpr std::size_t batches = 10;

std::string described(const std::vector<hazard::hazard>& found) {
  std::string text;
  for (const hazard::hazard& h : found) text += hazard::describe(h) + "\n";
  return text;
}

class PipelineHazards : public ::testing::TestWithParam<hazard::policy> {
 protected:
  // Runs `spec` twice under a tracker in the test's mode; returns what it found.
  void run_watched(const std::function<pipeline::pipeline_spec()>& make_spec, sim_mode mode) {
    Device device = Device::sim(sim_options{.mode = mode, .starve_delay = std::chrono::microseconds(200)});
    hazard::tracker hazards(device, GetParam());
    caching_allocator allocator(device);
    pipeline::pipeline watched(device, allocator, make_spec(), &hazards);
    (void)watched.run(batches);
    (void)watched.run(batches);
    found = hazards.hazards();
    inserted = hazards.inserted();
  }
  std::vector<hazard::hazard> found;
  hazard::insertion_counts inserted;
};

TEST_P(PipelineHazards, TheRingHasNoHazardAndNeedsNoInsertion) {
  ring_observations seen(batches);
  for (const sim_mode mode : {sim_mode::deterministic, sim_mode::threaded}) {
    const ring_options options{.upload = sim_pacing::starved};
    run_watched([&] { return ring_spec(options, seen); }, mode);
    EXPECT_TRUE(found.empty()) << described(found);
    EXPECT_EQ(inserted.total(), 0u);
    for (std::size_t b = 0; b < batches; ++b) EXPECT_EQ(seen.results[b], 2 * batch_value(b));
  }
}

TEST_P(PipelineHazards, TheTrainingStepWithSignalsAndSharedWeightsHasNoHazard) {
  training_observations seen(batches);
  for (const sim_mode mode : {sim_mode::deterministic, sim_mode::threaded}) {
    const training_options options{.compute = sim_pacing::starved};
    run_watched([&] { return training_spec(options, seen); }, mode);
    EXPECT_TRUE(found.empty()) << described(found);
    EXPECT_EQ(inserted.total(), 0u);
  }
}

// "peek" reads the slot's raw buffer through a pointer it kept from the upload stage, without
// declaring it: nothing orders it after the upload, and the report names its stage's stream.
TEST_P(PipelineHazards, AStageTouchingAnUndeclaredBufferIsReportedAgainstThatStage) {
  ring_observations seen(batches);
  const ring_options options;
  std::vector<const std::byte*> raw(options.depth, nullptr);
  auto make_spec = [&] {
    pipeline::pipeline_spec spec = ring_spec(options, seen);
    spec.stages[0].body = [&raw](pipeline::stage_context& ctx) {
      ctx.copy("raw", "staging");
      raw[ctx.slot()] = ctx.buffer("raw").data();
    };
    spec.stages.insert(spec.stages.begin() + 1, pipeline::stage_spec{
        .name = "peek",
        .outputs = {{.name = "peeked", .bytes = 64}},
        .body = [&raw](pipeline::stage_context& ctx) {
          ctx.launch(demo::fill_kernel(ctx.buffer_as<std::uint32_t>("peeked").data(), 16, 0) , {{raw[ctx.slot()], 64}},
                     {ctx.buffer("peeked")});
        }});
    return spec;
  };
  run_watched(make_spec, sim_mode::deterministic);
  if (GetParam() == hazard::policy::enforce) {  // enforce inserts the missing wait instead of reporting
    EXPECT_GT(inserted.stream_waits, 0u);
    return;
  }
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front().kind, hazard::hazard_kind::race) << described(found);
  EXPECT_EQ(found.front().second.stream, "peek") << described(found);
  EXPECT_EQ(found.front().first.stream, "upload") << described(found);
}

INSTANTIATE_TEST_SUITE_P(Modes, PipelineHazards, ::testing::Values(hazard::policy::report, hazard::policy::enforce),
                         [](const auto& info) { return info.param == hazard::policy::report ? "Report" : "Enforce"; });

}  // namespace

}  // namespace streamsafe::testing
