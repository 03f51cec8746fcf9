#include "args.hpp"

#include <charconv>
#include <sstream>

#include "streamsafe/error.hpp"

namespace streamsafe::cli {

namespace {
const option_spec* find_spec(const std::vector<option_spec>& specs, std::string_view name) {
  for (const auto& spec : specs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}
}  // namespace

args::args(std::string_view command, std::vector<std::string> argv, const std::vector<option_spec>& specs)
    : command_(command) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string_view word = argv[i];
    if (word.size() < 3 || !word.starts_with("--")) {
      positionals_.emplace_back(word);
      continue;
    }
    word.remove_prefix(2);
    std::optional<std::string> inline_value;
    if (auto eq = word.find('='); eq != std::string_view::npos) {
      inline_value = std::string(word.substr(eq + 1));
      word = word.substr(0, eq);
    }
    const option_spec* spec = find_spec(specs, word);
    if (spec == nullptr) {
      throw usage_error("streamsafe " + command_ + ": unknown option --" + std::string(word) +
                        " (see streamsafe " + command_ + " --help)");
    }
    if (!spec->takes_value) {
      if (inline_value) throw usage_error("streamsafe " + command_ + ": --" + spec->name + " takes no value");
      flags_.insert(spec->name);
      continue;
    }
    if (inline_value) {
      values_[spec->name] = *inline_value;
    } else if (i + 1 < argv.size()) {
      values_[spec->name] = argv[++i];
    } else {
      throw usage_error("streamsafe " + command_ + ": --" + spec->name + " needs a value");
    }
  }
}

bool args::has(std::string_view name) const {
  return flags_.contains(name) || values_.contains(name);
}

std::optional<std::string> args::value(std::string_view name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  return std::nullopt;
}

std::string args::value_or(std::string_view name, std::string fallback) const {
  return value(name).value_or(std::move(fallback));
}

template <typename number>
number args::number_or(std::string_view name, number fallback, std::string_view wanted) const {
  auto text = value(name);
  if (!text) return fallback;
  number parsed{};
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), parsed);
  if (ec != std::errc() || end != text->data() + text->size()) {
    throw usage_error("streamsafe " + command_ + ": --" + std::string(name) + " wants " + std::string(wanted) +
                      ", got '" + *text + "'");
  }
  return parsed;
}

std::uint64_t args::unsigned_or(std::string_view name, std::uint64_t fallback) const {
  return number_or<std::uint64_t>(name, fallback, "a non-negative integer");
}

double args::decimal_or(std::string_view name, double fallback) const {
  return number_or<double>(name, fallback, "a decimal number");
}

std::string usage(std::string_view command, std::string_view synopsis, const std::vector<option_spec>& specs) {
  std::ostringstream out;
  out << "usage: streamsafe " << command << ' ' << synopsis << '\n';
  for (const auto& spec : specs) {
    std::string left = "--" + spec.name + (spec.takes_value ? " VALUE" : "");
    out << "  " << left << std::string(left.size() < 22 ? 22 - left.size() : 1, ' ') << spec.help << '\n';
  }
  return out.str();
}

}  // namespace streamsafe::cli
