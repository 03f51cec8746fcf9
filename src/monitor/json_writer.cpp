#include "monitor/json_writer.hpp"

#include <charconv>
#include <cmath>

namespace streamsafe::monitor::detail {

void json_writer::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_in_scope_.back()) out_ << ',';
  first_in_scope_.back() = false;
}

json_writer& json_writer::open(char bracket) {
  separate();
  out_ << bracket;
  first_in_scope_.push_back(true);
  return *this;
}

json_writer& json_writer::close(char bracket) {
  first_in_scope_.pop_back();
  out_ << bracket;
  return *this;
}

json_writer& json_writer::begin_object() { return open('{'); }
json_writer& json_writer::end_object() { return close('}'); }
json_writer& json_writer::begin_array() { return open('['); }
json_writer& json_writer::end_array() { return close(']'); }

json_writer& json_writer::key(std::string_view name) {
  separate();
  write_string(name);
  out_ << ':';
  after_key_ = true;
  return *this;
}

json_writer& json_writer::value(std::string_view text) {
  separate();
  write_string(text);
  return *this;
}

json_writer& json_writer::value(double number) {
  separate();
  if (!std::isfinite(number)) {
    out_ << "null";
    return *this;
  }
  // Shortest text that reads back to the same double: exporter round trips stay exact.
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, number);
  out_.write(buffer, end - buffer);
  return *this;
}

json_writer& json_writer::value(std::int64_t number) {
  separate();
  out_ << number;
  return *this;
}

json_writer& json_writer::value(std::uint64_t number) {
  separate();
  out_ << number;
  return *this;
}

json_writer& json_writer::value(bool flag) {
  separate();
  out_ << (flag ? "true" : "false");
  return *this;
}

json_writer& json_writer::null() {
  separate();
  out_ << "null";
  return *this;
}

void json_writer::write_string(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out_ << '"';
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out_ << '\\' << c;
    } else if (u < 0x20) {
      out_ << "\\u00" << hex[u >> 4] << hex[u & 0xf];
    } else {
      out_ << c;
    }
  }
  out_ << '"';
}

}  // namespace streamsafe::monitor::detail
