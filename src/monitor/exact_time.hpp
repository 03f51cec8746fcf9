// Trace timestamps as written: Kineto writes epoch microseconds with nanosecond digits
// ("1712195495519689.047"), 19 significant digits where a double holds 15-16, so the reader takes
// the number's text to integer nanoseconds and converts to double only after subtracting the
// trace's origin.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace streamsafe::monitor::detail {

/// A JSON number of microseconds as integer nanoseconds, rounded half away from zero beyond the
/// third decimal. Plain decimals are exact; a number with an exponent goes through a double.
/// nullopt when the text is not a number or the value does not fit in int64 nanoseconds.
[[nodiscard]] std::optional<std::int64_t> microseconds_text_to_ns(std::string_view text);

/// A double as an integer, truncated; nullopt when it lies outside int64's range or is not a
/// number, where the conversion would be undefined behaviour.
[[nodiscard]] std::optional<std::int64_t> double_to_int64(double value);

}  // namespace streamsafe::monitor::detail
