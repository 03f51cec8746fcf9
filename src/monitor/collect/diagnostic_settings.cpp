#include "monitor/collect/diagnostic_settings.hpp"

#include <cstdlib>

namespace streamsafe::monitor::detail {

namespace {

std::string_view trimmed(std::string_view text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

/// Turns on the kind named `name` in `kinds`; false when it names none.
bool add_kind(device_kind_set& kinds, std::string_view name) {
  if (name == "kernel") kinds.kernel = true;
  else if (name == "memcpy") kinds.memcpy = true;
  else if (name == "memset") kinds.memset = true;
  else return false;
  return true;
}

void parse_kinds(std::string_view text, diagnostic_settings& settings) {
  text = trimmed(text);
  if (text.empty() || text == "all") return;
  device_kind_set kinds{false, false, false};
  if (text == "none") {
    settings.kinds = kinds;
    return;
  }
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto name = trimmed(text.substr(0, comma));
    if (!add_kind(kinds, name)) {
      settings.problems.push_back("STREAMSAFE_CUPTI_KINDS: unknown kind '" + std::string(name) + "' (kinds kept: all)");
      return;
    }
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  settings.kinds = kinds;
}

void parse_clock(std::string_view text, diagnostic_settings& settings) {
  text = trimmed(text);
  if (text.empty() || text == "host") return;
  if (text == "cupti") {
    settings.clock = cupti_clock::cupti;
    return;
  }
  settings.problems.push_back("STREAMSAFE_CUPTI_CLOCK: '" + std::string(text) + "' is neither host nor cupti (kept: host)");
}

void parse_observer(std::string_view text, diagnostic_settings& settings) {
  text = trimmed(text);
  if (text.empty() || text == "on") return;
  if (text == "off") {
    settings.observer = false;
    return;
  }
  settings.problems.push_back("STREAMSAFE_COLLECTOR_OBSERVER: '" + std::string(text) + "' is neither on nor off (kept: on)");
}

std::string kind_list(const device_kind_set& kinds) {
  std::string list;
  for (const auto& [on, name] : {std::pair{kinds.kernel, "kernel"}, {kinds.memcpy, "memcpy"}, {kinds.memset, "memset"}}) {
    if (!on) continue;
    if (!list.empty()) list += ',';
    list += name;
  }
  return list.empty() ? "none" : list;
}

}  // namespace

bool diagnostic_settings::is_default() const {
  return kinds == device_kind_set{} && clock == cupti_clock::host && observer && problems.empty();
}

std::string diagnostic_settings::describe() const {
  std::string text;
  const auto add = [&](const std::string& item) { text += (text.empty() ? "" : " ") + item; };
  if (kinds != device_kind_set{}) add("kinds=" + kind_list(kinds));
  if (clock == cupti_clock::cupti) add("clock=cupti");
  if (!observer) add("observer=off");
  for (const auto& problem : problems) add("(" + problem + ")");
  return text;
}

diagnostic_settings parse_diagnostic_settings(const char* kinds, const char* clock, const char* observer) {
  diagnostic_settings settings;
  parse_kinds(kinds != nullptr ? kinds : "", settings);
  parse_clock(clock != nullptr ? clock : "", settings);
  parse_observer(observer != nullptr ? observer : "", settings);
  return settings;
}

diagnostic_settings diagnostic_settings_from_environment() {
  return parse_diagnostic_settings(std::getenv("STREAMSAFE_CUPTI_KINDS"), std::getenv("STREAMSAFE_CUPTI_CLOCK"),
                                   std::getenv("STREAMSAFE_COLLECTOR_OBSERVER"));
}

}  // namespace streamsafe::monitor::detail
