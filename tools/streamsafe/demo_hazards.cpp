// Demo section 3: the hazard engine catches both bugs (the report a user reads) and `enforce`
// makes the same buggy programs correct.
#include <algorithm>
#include <ostream>

#include "demo_kernels.hpp"
#include "demo_sections.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/hazard/report_text.hpp"
#include "streamsafe/hazard/tracked_allocator.hpp"
#include "streamsafe/hazard/tracker.hpp"

namespace streamsafe::cli {

namespace {

constexpr std::size_t count = 1 << 18;
constexpr std::size_t bytes = count * sizeof(std::uint32_t);

bool all_equal(const std::uint32_t* values, std::uint32_t expected) {
  return std::all_of(values, values + count, [&](std::uint32_t v) { return v == expected; });
}

/// Producer/consumer without the wait. Returns whether the consumer's output was wrong.
bool missing_wait(Device& device, hazard::tracker& hazards, hazard::tracked_allocator& memory, std::uint32_t* host) {
  Stream producer(device, {.name = "producer", .pacing = sim_pacing::starved});
  Stream consumer(device, {.name = "consumer"});
  auto* in = static_cast<std::uint32_t*>(memory.allocate(bytes, consumer));
  auto* out = static_cast<std::uint32_t*>(memory.allocate(bytes, consumer));
  hazards.on(consumer).fill(in, 0xab, bytes);
  consumer.synchronize();
  hazards.on(producer).writes(in, bytes).launch(demo::slow_fill_kernel(in, count, 5));
  hazards.on(consumer).reads(in, bytes).writes(out, bytes).launch(demo::double_kernel(in, out, count));
  hazards.on(consumer).copy(host, out, bytes);
  consumer.synchronize();
  hazards.host_reads(host, bytes);
  const bool wrong = !all_equal(host, 10);
  device.synchronize();
  memory.deallocate(in);
  memory.deallocate(out);
  return wrong;
}

/// A side stream reads a block the host frees without record_stream; the allocator hands the
/// bytes to the next allocation at once. Returns whether the side stream saw the new data.
bool missing_record_stream(Device& device, hazard::tracker& hazards, hazard::tracked_allocator& memory,
                           std::uint32_t* host) {
  Stream main(device, {.name = "main"});
  Stream side(device, {.name = "side", .pacing = sim_pacing::starved});
  auto* seen = static_cast<std::uint32_t*>(memory.allocate(bytes, side));
  auto* block = static_cast<std::uint32_t*>(memory.allocate(bytes, main));
  hazards.on(main).writes(block, bytes).launch(demo::fill_kernel(block, count, 7));
  side.wait(main);
  hazards.on(side).reads(block, bytes).writes(seen, bytes).launch(demo::slow_copy_kernel(block, seen, count));
  memory.deallocate(block);  // the bug: record_stream(block, side) is missing
  auto* next = static_cast<std::uint32_t*>(memory.allocate(bytes, main));
  hazards.on(main).writes(next, bytes).launch(demo::fill_kernel(next, count, 99));
  hazards.on(side).copy(host, seen, bytes);
  side.synchronize();
  hazards.host_reads(host, bytes);
  const bool wrong = !all_equal(host, 7);
  device.synchronize();
  memory.deallocate(next);
  memory.deallocate(seen);
  return wrong;
}

struct run_outcome {
  std::uint64_t corrupted = 0;
  std::vector<hazard::hazard> hazards;
  hazard::insertion_counts inserted;
};

run_outcome run_both(Device& device, hazard::policy mode, std::uint64_t trials) {
  caching_allocator allocator(device);
  hazard::tracker hazards(device, mode);
  hazard::tracked_allocator memory(allocator, hazards);
  auto* host = static_cast<std::uint32_t*>(device.allocate_pinned(bytes));
  run_outcome outcome;
  for (std::uint64_t trial = 0; trial < trials; ++trial) {
    outcome.corrupted += missing_wait(device, hazards, memory, host) ? 1 : 0;
    outcome.corrupted += missing_record_stream(device, hazards, memory, host) ? 1 : 0;
  }
  device.deallocate_pinned(host);
  outcome.hazards = hazards.hazards();
  outcome.inserted = hazards.inserted();
  return outcome;
}

}  // namespace

std::vector<demo_figure> run_hazard_demo(const demo_setup& setup) {
  Device device = setup.device;
  const auto reported = run_both(device, hazard::policy::report, 1);
  const auto enforced = run_both(device, hazard::policy::enforce, setup.trials);
  const auto real_hazards = std::count_if(reported.hazards.begin(), reported.hazards.end(),
                                          [](const auto& h) { return !hazard::is_informational(h.kind); });
  if (setup.text != nullptr) {
    auto& out = *setup.text;
    out << "3. The hazard engine (STREAMSAFE_HAZARDS=report): both buggy programs above, tracked\n\n";
    for (const auto& found : reported.hazards) {
      if (!hazard::is_informational(found.kind)) out << hazard::describe(found) << '\n';
    }
    out << "   With STREAMSAFE_HAZARDS=enforce the same buggy programs ran " << setup.trials << " times each: "
        << enforced.corrupted << " corrupted; the engine inserted " << enforced.inserted.stream_waits
        << " waits, " << enforced.inserted.record_streams << " record_streams and " << enforced.inserted.host_syncs
        << " host syncs\n   (write them in your code, then drop to `report`).\n\n";
  }
  return {{"hazards_reported", std::to_string(real_hazards)},
          {"enforce_corrupted", std::to_string(enforced.corrupted)},
          {"enforce_inserted_waits", std::to_string(enforced.inserted.stream_waits)},
          {"enforce_inserted_record_streams", std::to_string(enforced.inserted.record_streams)}};
}

}  // namespace streamsafe::cli
