// The full-tracing recorder on cuda-shaped input: device ops as CUPTI gives them (GPU times and a
// correlation id, no launch time) and the runtime calls that enqueued them. An event record is
// placed where its stream reached it: after the work enqueued before the record call, which the
// recorder learns from the calls' start times, not from when the ops ran.
#include <gtest/gtest.h>

#include "monitor/collect/trace_recorder.hpp"

namespace streamsafe::monitor::detail {
namespace {

op_record device_op(stream_key stream, double start_us, double end_us, std::int64_t correlation) {
  op_record op;
  op.stream = stream;
  op.kind = op_kind::kernel;
  op.name = "work";
  op.ts_us = start_us;
  op.dur_us = end_us - start_us;
  op.correlation = correlation;  // enqueued_us stays unknown, as with CUPTI
  return op;
}

const gpu_op& op_of_kind(const trace& t, op_kind kind) {
  for (const auto& op : t.ops) {
    if (op.kind == kind) return op;
  }
  throw std::runtime_error("no such op");
}

TEST(TraceRecorder, MarkersSitAfterTheWorkEnqueuedBeforeThemWhenTheHostRunsAhead) {
  const stream_key producer{0, 1};
  const stream_key consumer{0, 2};
  trace_recorder recorder("live");
  // The host enqueues everything by t = 20 us; the GPU runs it from t = 100 us on.
  recorder.add_call(7, call_kind::launch, "cudaLaunchKernel", 10, 1, 1);
  recorder.add_call(7, call_kind::launch, "cudaLaunchKernel", 12, 1, 2);
  recorder.add_call(7, call_kind::launch, "cudaLaunchKernel", 16, 1, 3);
  recorder.add_op(device_op(producer, 100, 200, 1));
  recorder.add_op(device_op(producer, 200, 300, 2));
  recorder.add_op(device_op(consumer, 310, 400, 3));
  recorder.note_record(event_id{5}, producer, 13);  // after launch 2's call
  recorder.note_wait(consumer, event_id{5}, 14);
  const trace t = std::move(recorder).finish({}, "H200", 0);
  ASSERT_EQ(t.dependencies.size(), 1u);
  EXPECT_DOUBLE_EQ(op_of_kind(t, op_kind::event_record).ts_us, 300) << "after both producer kernels";
  EXPECT_DOUBLE_EQ(op_of_kind(t, op_kind::sync).end_us(), 300) << "the wait lasts until the record is reached";
}

TEST(TraceRecorder, WithoutTheCallsAnOpsStartStandsInForItsLaunch) {
  const stream_key producer{0, 1};
  trace_recorder recorder("live");
  recorder.add_op(device_op(producer, 100, 200, 1));
  recorder.note_record(event_id{5}, producer, 150);
  const trace t = std::move(recorder).finish({}, "H200", 0);
  EXPECT_DOUBLE_EQ(op_of_kind(t, op_kind::event_record).ts_us, 200);
}

}  // namespace
}  // namespace streamsafe::monitor::detail
