// Hazards in words and in JSON. Formatting only: no logic beyond choosing the words.
#pragma once

#include <string>

#include "streamsafe/hazard/hazard.hpp"

namespace streamsafe::hazard {

/// The fix in one sentence, e.g. "make stream `compute` wait on an event recorded on
/// `preprocess` after `normalize` (app.cpp:42)".
[[nodiscard]] std::string fix_text(const hazard& finding);

/// The report a user reads: a headline, both ops (op, stream, location, line), the bytes, the fix.
/// Several lines, each ending in '\n'.
[[nodiscard]] std::string describe(const hazard& finding);

/// One JSON object: {"kind":K,"first":{"line":L,...},"second":{...},"range":[P,N],"fix":"..."}.
[[nodiscard]] std::string to_json(const hazard& finding);

}  // namespace streamsafe::hazard
