// A streaming reader of op logs (formats v1 and v2, docs/oplog.md). It holds one line at a time, so a
// log of any length is read in memory bounded by its longest line.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <optional>

#include "streamsafe/hazard/oplog_op.hpp"

namespace streamsafe::hazard {

class oplog_reader {
 public:
  /// Reads and checks the version line at once. Throws parse_error (line 1) unless the first
  /// line is {"streamsafe_oplog":N} for a version N this build reads (1 to 3). `in` must
  /// outlive the reader.
  explicit oplog_reader(std::istream& in);
  ~oplog_reader();
  oplog_reader(const oplog_reader&) = delete;
  oplog_reader& operator=(const oplog_reader&) = delete;

  /// The next op, or nullopt at the end of the input. Blank lines are skipped; unknown fields are
  /// ignored. Throws parse_error naming the 1-based line for malformed JSON, an unknown op, a
  /// missing field, a field of the wrong type, or an op newer than the file's version. The op's
  /// views stay valid until the next call.
  [[nodiscard]] std::optional<oplog_op> next();

  /// Bytes consumed so far (for progress).
  [[nodiscard]] std::uint64_t bytes_read() const noexcept;
  /// The file's format version (its first line).
  [[nodiscard]] std::uint64_t version() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace streamsafe::hazard
