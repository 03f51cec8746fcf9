// A minimal streaming JSON writer for the monitor's exporters: commas and escaping handled once,
// here, instead of in every exporter. Internal.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>
#include <vector>

namespace streamsafe::monitor::detail {

class json_writer {
 public:
  explicit json_writer(std::ostream& out) : out_(out) {}

  json_writer& begin_object();
  json_writer& end_object();
  json_writer& begin_array();
  json_writer& end_array();
  json_writer& key(std::string_view name);
  json_writer& value(std::string_view text);
  json_writer& value(const char* text) { return value(std::string_view(text)); }
  json_writer& value(double number);
  json_writer& value(std::int64_t number);
  json_writer& value(std::uint64_t number);
  json_writer& value(int number) { return value(static_cast<std::int64_t>(number)); }
  json_writer& value(bool flag);
  json_writer& null();

  template <typename T>
  json_writer& field(std::string_view name, const T& v) {
    return key(name).value(v);
  }

 private:
  json_writer& open(char bracket);
  json_writer& close(char bracket);
  void separate();
  void write_string(std::string_view text);

  std::ostream& out_;
  std::vector<bool> first_in_scope_{true};
  bool after_key_ = false;
};

}  // namespace streamsafe::monitor::detail
