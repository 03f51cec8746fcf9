// The trace reader: what it takes from Kineto-style JSON, gzip, and malformed input rejected
// with the byte offset of the fault.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "streamsafe/error.hpp"
#include "streamsafe/monitor/trace_reader.hpp"

namespace streamsafe::monitor {
namespace {

constexpr std::string_view small_trace = R"json({
  "deviceProperties": [{"id": 0, "name": "Test GPU"}],
  "traceEvents": [
    {"ph": "M", "name": "thread_name", "pid": 0, "tid": 13, "args": {"name": "stream 13 "}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 660, "tid": 660, "ts": 5.5, "dur": 2,
     "args": {"correlation": 21}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 13, "ts": 10, "dur": 4,
     "args": {"device": 0, "stream": 13, "correlation": 21, "bytes": 1024}},
    {"args": {"stream": 7, "device": 0, "correlation": 22}, "dur": 3, "ts": 11, "tid": 7, "pid": 0, "name": "gemm",
     "cat": "kernel", "ph": "X"},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 660, "tid": 660, "ts": 1, "dur": 1},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 660, "tid": 660, "ts": 0, "dur": 30},
    {"ph": "s", "cat": "ac2g", "id": 21, "pid": 660, "tid": 660, "ts": 5.5}
  ]
})json";

TEST(TraceReader, ReadsGpuOpsCallsAndNames) {
  const auto t = parse_trace(small_trace);
  ASSERT_EQ(t.ops.size(), 2u);
  const gpu_op& copy = t.ops[0];  // sorted by time
  EXPECT_EQ(copy.kind, op_kind::memcpy);
  EXPECT_EQ(copy.stream, (stream_key{0, 13}));
  ASSERT_TRUE(t.origin_ns.has_value());
  EXPECT_EQ(*t.origin_ns, 5'500);  // the first timed event kept, cudaMemcpyAsync at 5.5 us
  EXPECT_DOUBLE_EQ(copy.ts_us, 10 - 5.5);
  EXPECT_EQ(copy.bytes, 1024u);
  EXPECT_EQ(copy.src, memory_kind::pageable);
  EXPECT_EQ(copy.dst, memory_kind::device);
  EXPECT_EQ(t.ops[1].kind, op_kind::kernel);  // keys in any order
  EXPECT_EQ(t.name_of(t.ops[1]), "gemm");
  ASSERT_EQ(t.calls.size(), 1u);
  EXPECT_EQ(t.calls[0].kind, call_kind::memcpy);
  EXPECT_EQ(t.calls[0].correlation, 21);
  ASSERT_EQ(t.annotations.size(), 1u);
  EXPECT_EQ(t.stream_names.at({0, 13}), "stream 13");
  EXPECT_EQ(t.device_names.at(0), "Test GPU");
}

TEST(TraceReader, AcceptsABareArray) {
  const auto t = parse_trace(R"([{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":2,"ts":0,"dur":1}])");
  ASSERT_EQ(t.ops.size(), 1u);
  EXPECT_EQ(t.ops[0].stream, (stream_key{1, 2}));
}

TEST(TraceReader, ResolvesDeclaredWaits) {
  const auto t = parse_trace(R"({"traceEvents":[
    {"ph":"X","cat":"cuda_event","name":"Event Record","pid":0,"tid":2,"ts":30,"dur":0,"args":{"stream":2,"correlation":900}},
    {"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":0,"tid":1,"ts":6,"dur":0,
     "args":{"stream":1,"wait_on_stream":2,"wait_on_cuda_event_record_corr_id":900}}]})");
  ASSERT_EQ(t.dependencies.size(), 1u);
  EXPECT_EQ(t.ops[t.dependencies[0].record_op].kind, op_kind::event_record);
  EXPECT_EQ(t.ops[t.dependencies[0].wait_op].kind, op_kind::sync);
}

TEST(TraceReader, AnIdTooLargeForSixtyFourBitsIsNoIdRatherThanAWrappedOne) {
  const auto t = parse_trace(R"([
    {"ph":"X","cat":"kernel","name":"k","pid":1,"tid":"stream 99999999999999999999","ts":0,"dur":1},
    {"ph":"X","cat":"kernel","name":"k","pid":1,"tid":"stream 9223372036854775807","ts":2,"dur":1}])");
  ASSERT_EQ(t.ops.size(), 2u);
  EXPECT_EQ(t.ops[0].stream, (stream_key{1, 0}));
  EXPECT_EQ(t.ops[1].stream, (stream_key{1, 9223372036854775807}));
}

struct malformed_case {
  std::string_view json;
  std::string_view fault;  // the text at which the error must be reported
};

TEST(TraceReader, RejectsMalformedInputWithTheOffset) {
  const malformed_case cases[] = {
      {R"({"traceEvents":[{"ph":"X",}]})", "}]}"},
      {R"({"traceEvents":[{"ph":"X","ts":1e}]})", "}]}"},
      {R"({"traceEvents":[{"name":"a\qb"}]})", "\\qb"},
      {R"({"traceEvents":{}})", "{}}"},
      {R"({"traceEvents":[1]})", "1]"},
      {R"({"traceEvents":[{"ph":"X","cat":"kernel","pid":0,"tid":7,"dur":1}]})", "{\"ph\""},
      {R"({"traceEvents":[{"ph":"X","cat":"kernel","pid":0,"tid":7,"ts":0,"dur":-1}]})", "{\"ph\""},
      {R"({"traceEvents":[{"ph":"X","cat":"kernel","pid":0,"tid":7,"ts":"soon","dur":1}]})", "{\"ph\""},
      {R"({"traceEvents":[]} trailing)", "trailing"},
      {R"({"other":[]})", R"({"other")"},
  };
  for (const auto& c : cases) {
    const auto expected = c.json.find(c.fault);
    ASSERT_NE(expected, std::string_view::npos) << c.json;
    try {
      (void)parse_trace(c.json, "case.json");
      ADD_FAILURE() << "accepted: " << c.json;
    } catch (const parse_error& e) {
      EXPECT_EQ(e.offset(), expected) << c.json << "\n" << e.what();
      EXPECT_NE(std::string(e.what()).find("case.json: byte " + std::to_string(expected)), std::string::npos) << e.what();
    }
  }
}

TEST(TraceReader, TruncatedInputPointsAtTheEnd) {
  constexpr std::string_view truncated = R"({"traceEvents":[{"ph":"X")";
  try {
    (void)parse_trace(truncated);
    ADD_FAILURE() << "accepted";
  } catch (const parse_error& e) {
    EXPECT_EQ(e.offset(), truncated.size());
  }
}

std::filesystem::path write_gzip(std::string_view name, std::string_view content) {
  const auto path = std::filesystem::temp_directory_path() / name;
  gzFile out = gzopen(path.c_str(), "wb");
  gzwrite(out, content.data(), static_cast<unsigned>(content.size()));
  gzclose(out);
  return path;
}

TEST(TraceReader, ReadsGzipAndPlainFilesAlike) {
  const auto gz = write_gzip("streamsafe_reader_test.json.gz", small_trace);
  const auto plain = std::filesystem::temp_directory_path() / "streamsafe_reader_test.json";
  std::ofstream(plain) << small_trace;
  EXPECT_EQ(read_trace(gz).ops.size(), read_trace(plain).ops.size());
  EXPECT_EQ(read_trace(gz).ops.size(), 2u);
}

TEST(TraceReader, CorruptGzipAndMissingFilesAreErrors) {
  auto path = write_gzip("streamsafe_reader_corrupt.json.gz", small_trace);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bytes.resize(bytes.size() / 2);  // truncated stream
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_THROW((void)read_trace(path), parse_error);
  EXPECT_THROW((void)read_trace("/nonexistent/trace.json"), error);
}

}  // namespace
}  // namespace streamsafe::monitor
