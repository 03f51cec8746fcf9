// Internal ids of the model: an agent slot (0 is the host, streams get 1, 2, ... in order of
// first sight) and an epoch (one agent's own logical time). Strong types, as in TSan's tsan_defs.h,
// so a slot can never be passed where an epoch is expected.
#pragma once

#include <cstdint>

namespace streamsafe::hazard::detail {

enum class agent_slot : std::uint32_t {};
enum class epoch : std::uint64_t {};

inline constexpr agent_slot host_slot{0};

[[nodiscard]] constexpr std::uint32_t index(agent_slot slot) noexcept { return static_cast<std::uint32_t>(slot); }
[[nodiscard]] constexpr std::uint64_t ticks(epoch time) noexcept { return static_cast<std::uint64_t>(time); }
[[nodiscard]] constexpr epoch next(epoch time) noexcept { return epoch{ticks(time) + 1}; }

}  // namespace streamsafe::hazard::detail
