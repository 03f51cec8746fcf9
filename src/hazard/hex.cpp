#include "hazard/hex.hpp"

#include <cstdio>

namespace streamsafe::hazard::detail {

std::string hex(std::uint64_t value) {
  char text[24];
  const int length = std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return std::string(text, static_cast<std::size_t>(length));
}

}  // namespace streamsafe::hazard::detail
