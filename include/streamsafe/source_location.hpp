// Where a call was made, captured by a default argument. std::source_location would do, but
// libstdc++ offers it only to compilers with __builtin_source_location (not clang 14, which
// builds the fuzz targets); the file/line builtins work everywhere.
#pragma once

namespace streamsafe {

class source_location {
 public:
  [[nodiscard]] static constexpr source_location current(const char* file = __builtin_FILE(),
                                                         unsigned line = __builtin_LINE()) noexcept {
    return source_location(file, line);
  }
  [[nodiscard]] constexpr const char* file_name() const noexcept { return file_; }
  [[nodiscard]] constexpr unsigned line() const noexcept { return line_; }

 private:
  constexpr source_location(const char* file, unsigned line) noexcept : file_(file), line_(line) {}
  const char* file_;
  unsigned line_;
};

}  // namespace streamsafe
