// Precondition checks that throw with the place they fired. Internal to the library.
#pragma once

#include <sstream>
#include <string>

#include "streamsafe/error.hpp"

namespace streamsafe::detail {

[[noreturn]] void throw_usage_error(const char* file, int line, const std::string& reason);

/// Builds a message from any streamable parts: SS_EXPECTS(p, "bad pointer ", ptr).
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

}  // namespace streamsafe::detail

/// Throws streamsafe::usage_error("file:line: reason") unless `cond` holds.
#define SS_EXPECTS(cond, ...)                                                           \
  do {                                                                                  \
    if (!(cond)) [[unlikely]] {                                                         \
      ::streamsafe::detail::throw_usage_error(__FILE__, __LINE__,                       \
                                              ::streamsafe::detail::concat(__VA_ARGS__)); \
    }                                                                                   \
  } while (0)
