// Rule default_stream_copy: the legacy default stream waits for all blocking streams and blocks
// them while its work runs, so a copy there serialises the other streams.
#include "monitor/intervals.hpp"
#include "monitor/rules/rules.hpp"
#include "monitor/text_format.hpp"

namespace streamsafe::monitor::detail {

namespace {
bool device_has_other_streams(const diagnosis_input& in, std::int32_t device) {
  for (const auto& s : in.usage.streams) {
    if (s.stream.device == device && s.stream.stream != legacy_default_stream) return true;
  }
  return false;
}

std::vector<interval> other_streams_busy(const diagnosis_input& in, std::int32_t device) {
  std::vector<interval> busy;
  for (const auto& op : in.t.ops) {
    if (op.stream.device == device && op.stream.stream != legacy_default_stream && is_work(op.kind)) {
      busy.push_back({op.ts_us, op.end_us()});
    }
  }
  return merge_intervals(std::move(busy));
}
}  // namespace

std::optional<finding> check_default_stream_copies(const diagnosis_input& in) {
  finding f{finding_kind::default_stream_copy, 0, 0, {}, {}, {}};
  std::vector<interval> copies;
  std::int32_t device = 0;
  for (std::size_t i = 0; i < in.t.ops.size(); ++i) {
    const gpu_op& op = in.t.ops[i];
    if (op.kind != op_kind::memcpy || op.stream.stream != legacy_default_stream) continue;
    if (!device_has_other_streams(in, op.stream.device)) continue;
    if (f.ops.empty()) device = op.stream.device;
    ++f.occurrences;
    f.cost_us += op.dur_us;
    copies.push_back({op.ts_us, op.end_us()});
    if (f.ops.size() < 3) f.ops.push_back(i);
  }
  if (f.occurrences == 0) return std::nullopt;
  const double concurrent = intersection_length(merge_intervals(std::move(copies)), other_streams_busy(in, device));
  f.evidence = std::to_string(f.occurrences) + " copies (" + format_duration(f.cost_us) +
               ") on the legacy default stream while other streams have work; other streams ran for only " +
               format_duration(concurrent) + " during them; first: " + format_op(in.t, f.ops.front(), in.origin_us);
  f.fix = "issue the copy on a dedicated non-blocking stream (cudaStreamCreateWithFlags(cudaStreamNonBlocking), "
          "torch.cuda.Stream()) and order it with an event, or compile with --default-stream per-thread";
  return f;
}

}  // namespace streamsafe::monitor::detail
