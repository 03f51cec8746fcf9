// A small command-line parser shared by the subcommands: `--key value`, `--key=value`, `--flag`
// and positionals. Unknown options are errors that name the option and the subcommand.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace streamsafe::cli {

struct option_spec {
  std::string name;         // without the leading dashes
  bool takes_value = true;  // false: a flag
  std::string help;
};

class args {
 public:
  /// Throws usage_error on an unknown option or a missing value.
  args(std::string_view command, std::vector<std::string> argv, const std::vector<option_spec>& specs);

  [[nodiscard]] bool has(std::string_view name) const;
  [[nodiscard]] std::optional<std::string> value(std::string_view name) const;
  [[nodiscard]] std::string value_or(std::string_view name, std::string fallback) const;
  /// Parses an unsigned integer option; throws usage_error naming the option on bad text.
  [[nodiscard]] std::uint64_t unsigned_or(std::string_view name, std::uint64_t fallback) const;
  /// Parses a decimal number option (such as 1.5); throws usage_error naming the option on bad text.
  [[nodiscard]] double decimal_or(std::string_view name, double fallback) const;
  [[nodiscard]] const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  template <typename number>
  [[nodiscard]] number number_or(std::string_view name, number fallback, std::string_view wanted) const;

  std::string command_;
  std::map<std::string, std::string, std::less<>> values_;
  std::set<std::string, std::less<>> flags_;
  std::vector<std::string> positionals_;
};

/// The usage text of a subcommand: one line, then one line per option.
std::string usage(std::string_view command, std::string_view synopsis, const std::vector<option_spec>& specs);

}  // namespace streamsafe::cli
