// Demo section 1: the missing wait_event (GUIDE.md section 1), buggy and fixed.
#include <algorithm>
#include <ostream>

#include "demo_kernels.hpp"
#include "demo_sections.hpp"
#include "streamsafe/event.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::cli {

namespace {

constexpr std::size_t values_per_buffer = 1 << 20;
constexpr std::uint32_t stale_value = 0xabababab;  // what the fresh buffer held before

enum class consumer_waits { no, yes };

/// One trial on fresh memory: the producer writes `value` after a delay, the consumer doubles
/// what it reads. Returns whether any doubled value is wrong.
bool trial_corrupts(Device& device, std::uint32_t value, consumer_waits waits) {
  Stream producer(device, {.name = "producer", .pacing = sim_pacing::starved});
  Stream consumer(device, {.name = "consumer"});
  Event written(device);
  const std::size_t bytes = values_per_buffer * sizeof(std::uint32_t);
  auto* in = static_cast<std::uint32_t*>(device.allocate(bytes));
  auto* out = static_cast<std::uint32_t*>(device.allocate(bytes));
  auto* host = static_cast<std::uint32_t*>(device.allocate_pinned(bytes));
  // Fresh memory holds whatever was there: make that explicit, and never the right answer.
  consumer.fill(in, 0xab, bytes);
  consumer.synchronize();

  producer.launch(demo::slow_fill_kernel(in, values_per_buffer, value));
  written.record(producer);
  if (waits == consumer_waits::yes) consumer.wait(written);
  consumer.launch(demo::double_kernel(in, out, values_per_buffer));
  consumer.copy(host, out, bytes);
  consumer.synchronize();
  const bool corrupted = std::any_of(host, host + values_per_buffer, [&](std::uint32_t v) { return v != 2 * value; });

  device.synchronize();
  device.deallocate_pinned(host);
  device.deallocate(out);
  device.deallocate(in);
  return corrupted;
}

std::uint64_t corrupted_trials(Device& device, std::uint64_t trials, consumer_waits waits, std::uint64_t seed) {
  std::uint64_t corrupted = 0;
  for (std::uint64_t trial = 0; trial < trials; ++trial) {
    const auto value = static_cast<std::uint32_t>(seed * 1000 + trial + 1);
    if (value != stale_value / 2 && trial_corrupts(device, value, waits)) ++corrupted;
  }
  return corrupted;
}

}  // namespace

std::vector<demo_figure> run_ordering_demo(const demo_setup& setup) {
  Device device = setup.device;
  const auto buggy = corrupted_trials(device, setup.trials, consumer_waits::no, setup.seed);
  const auto fixed = corrupted_trials(device, setup.trials, consumer_waits::yes, setup.seed);
  if (setup.text != nullptr) {
    auto& out = *setup.text;
    out << "1. Ordering: the consumer must wait for the producer's write (wait_event)\n"
        << "   Stream `producer` fills a fresh buffer after a delay; stream `consumer` doubles it.\n"
        << "   without wait_event: " << buggy << "/" << setup.trials << " trials corrupted\n"
        << "   with wait_event:    " << fixed << "/" << setup.trials << " trials corrupted\n"
        << "   Without the wait the consumer reads the buffer before the write lands and doubles\n"
        << "   stale bytes. Fix: record an event on `producer` after the write and make `consumer`\n"
        << "   wait on it (Event::record + Stream::wait), or Stream::wait(producer).\n\n";
  }
  return {{"buggy_corrupted", std::to_string(buggy)}, {"fixed_corrupted", std::to_string(fixed)}};
}

}  // namespace streamsafe::cli
