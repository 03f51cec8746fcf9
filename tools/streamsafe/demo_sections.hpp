// `streamsafe demo` is a sequence of sections, each one example of a multi-stream bug shown
// buggy and fixed on the chosen device. A section prints its own story (unless JSON is asked
// for) and returns its figures, which demo.cpp puts in the one JSON object it prints.
#pragma once

#include <cstdint>
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

}  // namespace streamsafe::cli
