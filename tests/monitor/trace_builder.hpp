// Builds small synthetic traces for the monitor's tests, so each test states its timeline in a
// few lines and works out the expected figures by hand.
#pragma once

#include <cstdint>
#include <string_view>

#include "streamsafe/monitor/trace.hpp"

namespace streamsafe::monitor::testing {

class trace_builder {
 public:
  /// A GPU op; `correlation` links it to a call added with `call` (-1: none).
  trace_builder& op(op_kind kind, std::int64_t stream, double ts, double dur, std::string_view name = "op",
                    std::int64_t correlation = -1, std::int32_t device = 0) {
    gpu_op o;
    o.stream = {device, stream};
    o.kind = kind;
    o.ts_us = ts;
    o.dur_us = dur;
    o.name = t_.names.intern(name);
    o.correlation = correlation;
    t_.ops.push_back(o);
    return *this;
  }
  trace_builder& kernel(std::int64_t stream, double ts, double dur, std::int64_t correlation = -1) {
    return op(op_kind::kernel, stream, ts, dur, "kernel", correlation);
  }
  trace_builder& copy(std::int64_t stream, double ts, double dur, std::string_view name = "Memcpy HtoD (Pinned -> Device)") {
    op(op_kind::memcpy, stream, ts, dur, name);
    if (name.find("Pageable") != std::string_view::npos) t_.ops.back().src = memory_kind::pageable;
    return *this;
  }
  /// A host runtime call on thread 1.
  trace_builder& call(std::string_view api, double ts, double dur, std::int64_t correlation = -1) {
    t_.calls.push_back({1, classify_call(api), ts, dur, t_.names.intern(api), correlation});
    return *this;
  }
  trace_builder& marker(std::string_view name, double ts, double dur) {
    t_.annotations.push_back({annotation_side::host, {}, 1, t_.names.intern(name), ts, dur});
    return *this;
  }
  trace build() {
    sort_by_time(t_);
    return t_;
  }

 private:
  trace t_;
};

}  // namespace streamsafe::monitor::testing
