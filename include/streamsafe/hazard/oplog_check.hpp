// Running the engine over an op log: what `streamsafe check` does, as a library call.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>

#include "streamsafe/hazard/engine.hpp"
#include "streamsafe/hazard/hazard.hpp"
#include "streamsafe/hazard/oplog_op.hpp"
#include "streamsafe/hazard/policy.hpp"

namespace streamsafe::hazard {

/// Feeds one op to the engine, as the op log format defines it (docs/oplog.md). A semantic error
/// (a free of an unknown pointer, an overlapping alloc) is thrown as parse_error naming op.line.
void apply(engine& model, const oplog_op& op);

struct check_options {
  policy mode = policy::report;
  /// Called with each hazard as it is found (required).
  std::function<void(const hazard&)> on_hazard;
  /// Called now and then with the bytes read so far (optional).
  std::function<void(std::uint64_t bytes_read)> on_progress;
};

struct check_summary {
  std::uint64_t ops = 0;            // op lines read (the version line and blank lines excluded)
  std::uint64_t hazards = 0;        // findings that are not informational
  std::uint64_t informational = 0;  // wait_unrecorded, redundant_wait
  insertion_counts inserted;        // under policy::enforce
};

/// Reads the whole log line by line, in memory bounded by the engine's live state. Throws
/// parse_error (with the 1-based line) on bad input.
check_summary check_oplog(std::istream& in, const check_options& options);

}  // namespace streamsafe::hazard
