// Rule serializing_wait: event waits between two streams that leave them never busy together:
// the second stream buys nothing but overhead.
#include <map>

#include "monitor/rules/rules.hpp"
#include "monitor/text_format.hpp"

namespace streamsafe::monitor::detail {

namespace {
using stream_pair = std::pair<stream_key, stream_key>;

stream_pair ordered(stream_key a, stream_key b) { return a < b ? stream_pair{a, b} : stream_pair{b, a}; }

double busy_of(const diagnosis_input& in, const stream_key& s) {
  for (const auto& u : in.usage.streams) {
    if (u.stream == s) return u.busy_us;
  }
  return 0;
}
}  // namespace

std::optional<finding> check_serializing_waits(const diagnosis_input& in) {
  std::map<stream_pair, std::pair<std::size_t, double>> waits;  // count, waited time
  std::map<stream_pair, std::size_t> example;
  for (const auto& gap : in.gaps) {
    if (gap.cause != gap_cause::event_wait || !gap.producer_op) continue;
    const auto key = ordered(gap.stream, in.t.ops[*gap.producer_op].stream);
    auto& [count, waited] = waits[key];
    ++count;
    waited += gap.length_us();
    example.try_emplace(key, gap.after_op);
  }
  finding f{finding_kind::serializing_wait, 0, 0, {}, {}, {}};
  for (const auto& device : in.usage.devices) {
    for (const auto& pair : device.stream_pairs) {
      auto it = waits.find(ordered(pair.a, pair.b));
      if (it == waits.end()) continue;
      const double smaller = std::min(busy_of(in, pair.a), busy_of(in, pair.b));
      // "Fully serialised": together for at most 1% of the less busy stream's work.
      if (smaller <= 0 || pair.overlap_us > 0.01 * smaller) continue;
      ++f.occurrences;
      f.cost_us += it->second.second;
      f.ops.push_back(example[it->first]);
      if (!f.evidence.empty()) f.evidence += "; ";
      f.evidence += format_stream(in.t, pair.a) + " and " + format_stream(in.t, pair.b) + " were busy together for " +
                    format_duration(pair.overlap_us) + " while " + std::to_string(it->second.first) +
                    " event waits between them idled the waiting stream for " + format_duration(it->second.second);
    }
  }
  if (f.occurrences == 0) return std::nullopt;
  f.fix = "record the event right after the op the consumer needs (not after the whole batch) and double-buffer, "
          "so the producer fills buffer i+1 while the consumer uses buffer i";
  return f;
}

}  // namespace streamsafe::monitor::detail
