// The fields an op log line may carry, and which ones each op needs (docs/oplog.md, v2).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "streamsafe/hazard/oplog_op.hpp"

namespace streamsafe::hazard::detail {

enum class field : std::uint8_t { op, stream, event, ptr, size, name, loc, reads, writes, src, dst, ranges };

/// A set of fields, as bits.
class field_set {
 public:
  constexpr field_set() = default;
  constexpr field_set(std::initializer_list<field> fields) {
    for (const field f : fields) add(f);
  }
  constexpr void add(field f) noexcept { bits_ |= bit(f); }
  [[nodiscard]] constexpr bool has(field f) const noexcept { return (bits_ & bit(f)) != 0; }

 private:
  [[nodiscard]] static constexpr std::uint32_t bit(field f) noexcept { return 1U << static_cast<unsigned>(f); }
  std::uint32_t bits_ = 0;
};

/// The key of a field in the JSON text.
[[nodiscard]] std::string_view field_key(field f) noexcept;
/// The field a JSON key names, or nullopt for a key this version does not know (ignored).
[[nodiscard]] std::optional<field> field_of_key(std::string_view key) noexcept;
/// The op kind an "op" value names, or nullopt.
[[nodiscard]] std::optional<op_kind> op_kind_of(std::string_view name) noexcept;
/// The fields an op of `kind` must carry.
[[nodiscard]] field_set required_fields(op_kind kind) noexcept;

inline constexpr std::array all_fields{field::op,   field::stream, field::event,  field::ptr, field::size, field::name,
                                       field::loc,  field::reads,  field::writes, field::src, field::dst,  field::ranges};

}  // namespace streamsafe::hazard::detail
