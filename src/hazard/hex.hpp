// Addresses as users read them: 0x-prefixed lower-case hex.
#pragma once

#include <cstdint>
#include <string>

namespace streamsafe::hazard::detail {

[[nodiscard]] std::string hex(std::uint64_t value);

}  // namespace streamsafe::hazard::detail
