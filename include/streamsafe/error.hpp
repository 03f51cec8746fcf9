// The exceptions streamsafe throws. Few and meaningful, so callers can catch by cause:
//  - usage_error:   a broken precondition: a moved-from handle, a foreign pointer, a double free,
//                   a stream and event of different devices. The object stays usable.
//  - cuda_error:    a CUDA call failed; what() names the call, the CUDA error name and the handle.
//  - out_of_memory: thrown only when memory is known to be exhausted (after the allocator's
//                   reclaim ladder); what() gives the figures needed to act on it.
//  - parse_error:   a malformed input file; what() and location() say where.
// All derive from streamsafe::error, itself a std::runtime_error.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace streamsafe {

class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class usage_error : public error {
 public:
  using error::error;
};

class cuda_error : public error {
 public:
  cuda_error(const std::string& what, int code) : error(what), code_(code) {}
  /// The cudaError_t value (0 never appears here).
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};

class out_of_memory : public error {
 public:
  using error::error;
};

class parse_error : public error {
 public:
  /// `line` is 1-based; 0 when the input has no lines (a byte offset is then in `offset`).
  parse_error(const std::string& what, std::size_t line, std::size_t offset = 0)
      : error(what), line_(line), offset_(offset) {}
  [[nodiscard]] std::size_t line() const noexcept { return line_; }
  [[nodiscard]] std::size_t offset() const noexcept { return offset_; }

 private:
  std::size_t line_;
  std::size_t offset_;
};

}  // namespace streamsafe
