#include "monitor/exact_time.hpp"

#include <charconv>
#include <cmath>
#include <limits>

namespace streamsafe::monitor::detail {

namespace {

constexpr std::int64_t max_ns = std::numeric_limits<std::int64_t>::max();

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::optional<std::int64_t> through_double(std::string_view text) {
  double us = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), us);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return double_to_int64(std::round(us * 1000.0));
}

/// value * 10 + digit, or nullopt on overflow.
std::optional<std::int64_t> push_digit(std::int64_t value, char digit) {
  const std::int64_t d = digit - '0';
  if (value > (max_ns - d) / 10) return std::nullopt;
  return value * 10 + d;
}

}  // namespace

std::optional<std::int64_t> double_to_int64(double value) {
  constexpr double limit = 9.2e18;  // just inside 2^63
  if (!(value > -limit && value < limit)) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

std::optional<std::int64_t> microseconds_text_to_ns(std::string_view text) {
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  if (text.find_first_of("eE") != std::string_view::npos) return through_double(text);
  const bool negative = !text.empty() && text.front() == '-';
  if (negative) text.remove_prefix(1);
  const auto point = text.find('.');
  const std::string_view whole = text.substr(0, point);
  const std::string_view fraction = point == std::string_view::npos ? std::string_view{} : text.substr(point + 1);
  if (whole.empty() || (point != std::string_view::npos && fraction.empty())) return std::nullopt;
  std::optional<std::int64_t> ns = 0;
  for (const char c : whole) {
    if (!is_digit(c) || !(ns = push_digit(*ns, c))) return std::nullopt;
  }
  for (std::size_t i = 0; i < 3; ++i) {
    const char c = i < fraction.size() ? fraction[i] : '0';
    if (!is_digit(c) || !(ns = push_digit(*ns, c))) return std::nullopt;
  }
  for (std::size_t i = 3; i < fraction.size(); ++i) {
    if (!is_digit(fraction[i])) return std::nullopt;
  }
  if (fraction.size() > 3 && fraction[3] >= '5') {
    if (*ns == max_ns) return std::nullopt;
    ++*ns;
  }
  return negative ? -*ns : *ns;
}

}  // namespace streamsafe::monitor::detail
