// Diagnostic settings of the live collector, read from the environment once per collector, for
// experiments on what collection costs (docs/monitor.md, "Diagnostic settings"). The defaults
// are the collector's normal behaviour; anything else is for measuring, not for production.
//
//   STREAMSAFE_CUPTI_KINDS     device-side CUPTI kinds always on: a comma list of kernel,
//                              memcpy, memset; "all" (default) or "none".
//   STREAMSAFE_CUPTI_CLOCK     host (default): CUPTI stamps records with the host's steady clock
//                              (timestamp callback); cupti: CUPTI's own clock, aligned to the
//                              host's once at start (cuptiGetTimestamp).
//   STREAMSAFE_COLLECTOR_OBSERVER  on (default) | off: off attaches no runtime observer (no
//                              stream names, no dependency edges, no host calls on sim).
// Internal to the collector.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace streamsafe::monitor::detail {

/// The device-side kinds the CUPTI source enables outside traced windows.
struct device_kind_set {
  bool kernel = true;
  bool memcpy = true;
  bool memset = true;
  friend bool operator==(const device_kind_set&, const device_kind_set&) = default;
};

/// Whose clock stamps CUPTI's records.
enum class cupti_clock { host, cupti };

struct diagnostic_settings {
  device_kind_set kinds;
  cupti_clock clock = cupti_clock::host;
  bool observer = true;
  /// Values that were not understood (their setting keeps its default), one text each.
  std::vector<std::string> problems;

  [[nodiscard]] bool is_default() const;
  /// "kinds=kernel,memcpy clock=cupti observer=off" (the non-default settings and any problems);
  /// empty for the defaults.
  [[nodiscard]] std::string describe() const;
};

/// Parses the three values (nullptr: unset, the default).
[[nodiscard]] diagnostic_settings parse_diagnostic_settings(const char* kinds, const char* clock,
                                                            const char* observer);
/// parse_diagnostic_settings of STREAMSAFE_CUPTI_KINDS, STREAMSAFE_CUPTI_CLOCK and
/// STREAMSAFE_COLLECTOR_OBSERVER.
[[nodiscard]] diagnostic_settings diagnostic_settings_from_environment();

}  // namespace streamsafe::monitor::detail
