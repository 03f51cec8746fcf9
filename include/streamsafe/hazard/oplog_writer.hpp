// Writes op logs (format version oplog_version, docs/oplog.md): the engine's recorder, and a
// way for tests and tools to produce logs. What it writes, oplog_reader reads back to the same ops.
#pragma once

#include <ostream>

#include "streamsafe/hazard/oplog_op.hpp"

namespace streamsafe::hazard {

class oplog_writer {
 public:
  /// Writes the version line at once. `out` must outlive the writer.
  explicit oplog_writer(std::ostream& out);

  /// Appends one op as one line; empty name and loc are left out. Fields a kind does not use are
  /// not written.
  void write(const oplog_op& op);

 private:
  std::ostream* out_;
};

}  // namespace streamsafe::hazard
