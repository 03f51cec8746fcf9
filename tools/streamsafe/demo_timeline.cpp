// The pipeline timeline section of `streamsafe demo`: a copy -> compute -> copy-back pipeline
// over three streams with event hand-offs, collected live (monitor/collector.hpp), summarized
// per stream in the terminal and written as a Chrome trace and an HTML report.
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "demo_kernels.hpp"
#include "demo_sections.hpp"
#include "streamsafe/error.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/monitor/analysis.hpp"
#include "streamsafe/monitor/chrome_trace.hpp"
#include "streamsafe/monitor/collector.hpp"
#include "streamsafe/monitor/report_html.hpp"
#include "streamsafe/monitor/report_text.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::cli {

namespace {

constexpr std::size_t stages = 8;
constexpr std::size_t values = 64 * 1024;
constexpr std::size_t bytes = values * sizeof(std::uint32_t);

/// Upload on "h2d", compute on "compute", download on "d2h"; each stage's hand-offs are events,
/// and two buffers in flight let the upload of stage i+1 overlap the compute of stage i.
void run_pipeline(Device device) {
  Stream h2d(device, {.name = "h2d"});
  Stream compute(device, {.name = "compute"});
  Stream d2h(device, {.name = "d2h"});
  auto* host = static_cast<std::uint32_t*>(device.allocate_pinned(bytes));
  std::vector<std::uint32_t*> in(2), out(2);
  for (std::size_t slot = 0; slot < 2; ++slot) {
    in[slot] = static_cast<std::uint32_t*>(device.allocate(bytes));
    out[slot] = static_cast<std::uint32_t*>(device.allocate(bytes));
  }
  std::vector<Event> uploaded, computed, downloaded;
  for (std::size_t i = 0; i < stages; ++i) {
    uploaded.emplace_back(device);
    computed.emplace_back(device);
    downloaded.emplace_back(device);
  }
  for (std::size_t i = 0; i < stages; ++i) {
    const std::size_t slot = i % 2;
    if (i >= 2) h2d.wait(computed[i - 2]);  // the slot's input is free once its compute is done
    h2d.copy(in[slot], host, bytes);
    uploaded[i].record(h2d);
    compute.wait(uploaded[i]);
    if (i >= 2) compute.wait(downloaded[i - 2]);  // the slot's output is free once downloaded
    compute.launch(demo::slow_copy_kernel(in[slot], out[slot], values, 200));
    computed[i].record(compute);
    d2h.wait(computed[i]);
    d2h.copy(host, out[slot], bytes);
    downloaded[i].record(d2h);
  }
  device.synchronize();
  for (std::size_t slot = 0; slot < 2; ++slot) {
    device.deallocate(in[slot]);
    device.deallocate(out[slot]);
  }
  device.deallocate_pinned(host);
}


}  // namespace

std::filesystem::path write_demo_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream file(path, std::ios::binary);
  file << content;
  if (!file) throw error("streamsafe demo: cannot write " + path.string());
  return path;
}

// Deterministic sim runs one op at a time, so a timeline there could show no overlap.
Device overlapping_device(const demo_setup& setup) {
  if (setup.device.backend() == backend_kind::cuda) return setup.device;
  return Device::sim({.memory_capacity = std::size_t{64} << 20, .mode = sim_mode::threaded, .seed = setup.seed});
}

std::vector<demo_figure> run_timeline_demo(const demo_setup& setup) {
  Device device = overlapping_device(setup);
  monitor::collector collect(device);
  if (collect.status() == monitor::collector_status::inactive) {
    if (setup.text != nullptr) *setup.text << "Pipeline timeline: skipped. " << collect.status_message() << "\n\n";
    return {{"timeline_collected", "false"}};
  }
  const auto collected = collect.capture_window([&] { run_pipeline(device); });
  const auto result = monitor::analyze(collected);
  const monitor::rank_report rank{0, collected, result};

  std::ostringstream chrome, html;
  monitor::write_chrome_trace(chrome, collected, result.gaps);
  monitor::write_report_html(html, {&rank, 1});
  std::filesystem::create_directories(setup.output_dir);
  const auto trace_path = write_demo_file(setup.output_dir / "streamsafe-demo-timeline.json", chrome.str());
  const auto html_path = write_demo_file(setup.output_dir / "streamsafe-demo-timeline.html", html.str());

  double overlap_us = 0;
  for (const auto& device : result.usage.devices) {
    for (const auto& pair : device.stream_pairs) overlap_us += pair.overlap_us;
  }
  if (setup.text != nullptr) {
    *setup.text << "4. Timeline: a copy -> compute -> copy-back pipeline over 3 streams, " << stages
                << " stages, collected live on " << device.name() << "\n";
    monitor::write_report_text(*setup.text, {&rank, 1});
    *setup.text << "Chrome trace (open in Perfetto): " << std::filesystem::absolute(trace_path).lexically_normal().string()
                << "\nHTML report: " << std::filesystem::absolute(html_path).lexically_normal().string() << "\n\n";
  }
  return {{"timeline_collected", "true"},
          {"timeline_streams", std::to_string(result.usage.streams.size())},
          {"timeline_overlap_us", std::to_string(overlap_us)},
          {"timeline_dependencies", std::to_string(collected.dependencies.size())}};
}

}  // namespace streamsafe::cli
