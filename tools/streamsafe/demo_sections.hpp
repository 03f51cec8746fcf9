// `streamsafe demo` is a sequence of sections, each one example of a multi-stream bug shown
// buggy and fixed on the chosen device. A section prints its own story (unless JSON is asked
// for) and returns its figures, which demo.cpp puts in the one JSON object it prints.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "streamsafe/device.hpp"

namespace streamsafe::cli {

struct demo_setup {
  Device device;
  std::uint64_t trials = 20;
  std::uint64_t seed = 1;
  std::ostream* text = nullptr;  // where the story goes; nullptr with --json
  std::filesystem::path output_dir = ".";  // where sections write files (the timeline's trace)
};

/// One figure of a section: a JSON key and its value, already JSON (a number, true/false, or a
/// quoted string).
using demo_figure = std::pair<std::string, std::string>;

/// The producer/consumer example (GUIDE.md section 1): a missing wait_event.
/// Figures: buggy_corrupted, fixed_corrupted.
std::vector<demo_figure> run_ordering_demo(const demo_setup& setup);

/// The side-stream reader whose buffer is freed and reused (GUIDE.md section 1): a missing
/// record_stream. Figures prefixed `lifetime_`.
std::vector<demo_figure> run_lifetime_demo(const demo_setup& setup);

/// Both buggy programs through the hazard engine: the reports, then `enforce` fixing them.
/// Figures: hazards_reported, enforce_corrupted, enforce_inserted_waits,
/// enforce_inserted_record_streams.
std::vector<demo_figure> run_hazard_demo(const demo_setup& setup);

/// A copy -> compute -> copy-back pipeline collected live: per-stream busy/overlap summary, a
/// Chrome trace and an HTML report written to the current directory (streamsafe-demo-timeline.*).
/// Figures: timeline_collected, timeline_streams, timeline_overlap_us, timeline_dependencies.
std::vector<demo_figure> run_timeline_demo(const demo_setup& setup);

/// A hand-made four-stream training loop (data, preprocess, compute, sync, the optimizer on the
/// default stream) under the hazard engine, then the same step on the stage pipeline, traced.
/// Figures: handmade_loop_hazards, pipeline_hazards, pipeline_timeline_collected.
std::vector<demo_figure> run_pipeline_demo(const demo_setup& setup);

/// The device of a section whose streams must really run at once: the demo's device on cuda, a
/// threaded sim device (same seed) on sim.
Device overlapping_device(const demo_setup& setup);

/// Writes `content` to `path` and returns it; throws error naming the path if it cannot.
std::filesystem::path write_demo_file(const std::filesystem::path& path, const std::string& content);

}  // namespace streamsafe::cli
