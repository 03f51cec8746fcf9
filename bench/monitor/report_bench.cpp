// `streamsafe report` throughput: MB of trace JSON per second on one core, over a large trace
// built in memory in PyTorch-profiler (Kineto) form: two GPU streams (compute and copy), a launch
// call with a correlation id for every GPU op, CPU ops the reader must skip, and step markers.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <sstream>
#include <string>

#include "streamsafe/monitor/analysis.hpp"
#include "streamsafe/monitor/trace_reader.hpp"

namespace {

std::string make_trace(std::size_t target_bytes) {
  std::ostringstream out;
  out << R"j({"schemaVersion":1,"deviceProperties":[{"id":0,"name":"bench"}],"traceEvents":[)j" << '\n';
  double host = 1000, gpu = 1000;
  for (std::size_t step = 0, correlation = 1; out.tellp() < static_cast<std::streamoff>(target_bytes); ++step) {
    out << R"j({"ph":"X","cat":"user_annotation","name":"ProfilerStep#)j" << step << R"j(","pid":1,"tid":1,"ts":)j" << host
        << R"j(,"dur":500,"args":{"External id":)j" << step << "}},\n";
    for (int op = 0; op < 20; ++op, ++correlation) {
      const bool copy = op % 5 == 0;
      out << R"j({"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":)j" << host
          << R"j(,"dur":8.25,"args":{"External id":)j" << correlation << R"j(,"Record function id":0,"Ev Idx":)j" << op << "}},\n";
      out << R"j({"ph":"X","cat":"cuda_runtime","name":")j" << (copy ? "cudaMemcpyAsync" : "cudaLaunchKernel")
          << R"j(","pid":1,"tid":1,"ts":)j" << host + 1 << R"j(,"dur":4.5,"args":{"cbid":211,"correlation":)j" << correlation
          << "}},\n";
      if (copy) {
        out << R"j({"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":13,"ts":)j" << gpu
            << R"j(,"dur":20.5,"args":{"device":0,"context":1,"stream":13,"correlation":)j" << correlation
            << R"j(,"bytes":1048576,"memory bandwidth (GB/s)":51.2}},)j" << '\n';
      } else {
        out << R"j({"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_kernel","pid":0,"tid":7,"ts":)j"
            << gpu << R"j(,"dur":12.75,"args":{"queued":0,"device":0,"context":1,"stream":7,"correlation":)j" << correlation
            << R"j(,"registers per thread":128,"shared memory":33792,"grid":[32,16,1],"block":[128,1,1]}},)j" << '\n';
      }
      out << R"j({"ph":"f","id":)j" << correlation << R"j(,"pid":0,"tid":7,"ts":)j" << gpu << R"j(,"cat":"ac2g","name":"ac2g","bp":"e"},)j" << '\n';
      host += 12;
      gpu += 13;
    }
  }
  out << R"j({"ph":"M","name":"thread_name","pid":0,"tid":7,"args":{"name":"stream 7"}}]})j" << '\n';
  return out.str();
}

const std::string& large_trace() {
  static const std::string trace = make_trace(128u << 20);  // ~128 MiB
  return trace;
}

void read_only(benchmark::State& state) {
  const std::string& json = large_trace();
  for (auto _ : state) benchmark::DoNotOptimize(streamsafe::monitor::parse_trace(json));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * json.size()));
  state.counters["MB"] = static_cast<double>(json.size()) / 1e6;
}

/// The large trace written to a file once, removed at exit: what `streamsafe report FILE` reads.
class trace_file {
 public:
  trace_file() : path_(std::filesystem::temp_directory_path() / "streamsafe_report_bench.json") {
    std::ofstream(path_, std::ios::binary) << large_trace();
  }
  ~trace_file() { std::filesystem::remove(path_); }
  trace_file(const trace_file&) = delete;
  trace_file& operator=(const trace_file&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void read_and_analyze_once(const std::string& json) {
  const auto t = streamsafe::monitor::parse_trace(json);
  benchmark::DoNotOptimize(streamsafe::monitor::analyze(t));
}

/// Steady state: the process has parsed a trace before (the allocator holds memory it can reuse),
/// as when `report` reads one file per rank.
void read_and_analyze(benchmark::State& state) {
  const std::string& json = large_trace();
  for (auto _ : state) read_and_analyze_once(json);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * json.size()));
  state.counters["MB"] = static_cast<double>(json.size()) / 1e6;
}

/// The first trace of a thread: each iteration on a new thread (with its own malloc arena), so
/// memory comes fresh from the system, page faults included, as for `report` on a single file.
void read_and_analyze_first(benchmark::State& state) {
  const std::string& json = large_trace();
  for (auto _ : state) std::thread([&json] { read_and_analyze_once(json); }).join();
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * json.size()));
  state.counters["MB"] = static_cast<double>(json.size()) / 1e6;
}

/// `streamsafe report FILE` on one file, first trace of the process: the file read (from the page
/// cache), parse and analysis, on a new thread each time.
void report_file_first(benchmark::State& state) {
  static const trace_file file;
  for (auto _ : state) {
    std::thread([] { benchmark::DoNotOptimize(streamsafe::monitor::analyze(streamsafe::monitor::read_trace(file.path()))); })
        .join();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * large_trace().size()));
  state.counters["MB"] = static_cast<double>(large_trace().size()) / 1e6;
}

}  // namespace

BENCHMARK(read_only)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(read_and_analyze)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(read_and_analyze_first)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK(report_file_first)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK_MAIN();
