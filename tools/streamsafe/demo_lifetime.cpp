// The lifetime section of `streamsafe demo` (GUIDE.md section 1): a side stream reads a buffer,
// the host frees it, and the allocator hands the memory to the next allocation on the buffer's
// own stream, which overwrites it (same-stream reuse needs no wait: that is the caching
// allocator's contract, and why it must be told about the side stream).
// Without record_stream the reader sees the new owner's data; with it, never; with the poison
// adaptor the bug shows in every trial. On sim the reader's stream is starved, so it always
// loses the race; on cuda its kernel spins about 2 ms before reading.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "demo_kernels.hpp"
#include "demo_sections.hpp"
#include "streamsafe/alloc/caching_allocator.hpp"
#include "streamsafe/alloc/poison_adaptor.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::cli {

namespace {

constexpr std::size_t element_count = 1 << 16;
constexpr std::uint32_t old_value = 1;  // what the reader must see
constexpr std::uint32_t new_value = 2;  // what the next owner writes

enum class lifetime_variant { missing_record_stream, with_record_stream, missing_record_stream_poisoned };

struct lifetime_rig {
  explicit lifetime_rig(const Device& device)
      : owner(device, stream_options{.name = "owner"}),
        reader(device, stream_options{.name = "side reader", .pacing = sim_pacing::starved}),
        allocator(device, allocator_options{.segments = segment_kind::fixed}),
        poisoned(allocator),
        copy_out(static_cast<std::uint32_t*>(Device(device).allocate(element_count * sizeof(std::uint32_t)))),
        host(static_cast<std::uint32_t*>(Device(device).allocate_pinned(element_count * sizeof(std::uint32_t)))),
        device_(device) {}
  ~lifetime_rig() {
    device_.synchronize();
    device_.deallocate(copy_out);
    device_.deallocate_pinned(host);
  }
  lifetime_rig(const lifetime_rig&) = delete;
  lifetime_rig& operator=(const lifetime_rig&) = delete;

  Stream owner;
  Stream reader;
  caching_allocator allocator;
  poison_adaptor poisoned;
  std::uint32_t* copy_out;
  std::uint32_t* host;

 private:
  Device device_;
};

void free_buffer(lifetime_rig& rig, void* buffer, lifetime_variant variant) {
  switch (variant) {
    case lifetime_variant::missing_record_stream: rig.allocator.deallocate(buffer); return;
    case lifetime_variant::with_record_stream:
      rig.allocator.record_stream(buffer, rig.reader);
      rig.allocator.deallocate(buffer);
      return;
    case lifetime_variant::missing_record_stream_poisoned: rig.poisoned.deallocate(buffer); return;
  }
}

/// One trial; true when the reader saw anything but the old contents.
bool run_trial(lifetime_rig& rig, lifetime_variant variant) {
  constexpr std::size_t bytes = element_count * sizeof(std::uint32_t);
  // A block freed through the adaptor is allocated through it (it knows the blocks it poisons).
  auto* buffer = static_cast<std::uint32_t*>(variant == lifetime_variant::missing_record_stream_poisoned
                                                 ? rig.poisoned.allocate(bytes, rig.owner)
                                                 : rig.allocator.allocate(bytes, rig.owner));
  rig.owner.launch(demo::fill_kernel(buffer, element_count, old_value));
  rig.reader.wait(rig.owner);  // the ordering half is right: the reader waits for the write
  rig.reader.launch(demo::slow_copy_kernel(buffer, rig.copy_out, element_count));
  free_buffer(rig, buffer, variant);
  auto* reused = static_cast<std::uint32_t*>(rig.allocator.allocate(bytes, rig.owner));
  rig.owner.launch(demo::fill_kernel(reused, element_count, new_value));
  rig.reader.copy(rig.host, rig.copy_out, bytes);
  rig.reader.synchronize();
  rig.allocator.deallocate(reused);
  for (std::size_t i = 0; i < element_count; ++i) {
    if (rig.host[i] != old_value) return true;
  }
  return false;
}

std::uint64_t corrupted_trials(const demo_setup& setup, lifetime_variant variant) {
  lifetime_rig rig(setup.device);
  std::uint64_t corrupted = 0;
  for (std::uint64_t trial = 0; trial < setup.trials; ++trial) corrupted += run_trial(rig, variant) ? 1 : 0;
  return corrupted;
}

}  // namespace

std::vector<demo_figure> run_lifetime_demo(const demo_setup& setup) {
  const std::uint64_t buggy = corrupted_trials(setup, lifetime_variant::missing_record_stream);
  const std::uint64_t fixed = corrupted_trials(setup, lifetime_variant::with_record_stream);
  const std::uint64_t poisoned = corrupted_trials(setup, lifetime_variant::missing_record_stream_poisoned);
  if (setup.text != nullptr) {
    std::ostream& out = *setup.text;
    out << "2. Lifetime: memory used on another stream must not be reused too early (record_stream)\n"
        << "   Stream `side` reads a buffer the host then frees; the caching allocator hands the memory\n"
        << "   to the next allocation on the buffer's own stream, which overwrites it.\n"
        << "   without record_stream:         " << buggy << "/" << setup.trials << " trials corrupted\n"
        << "   with record_stream(side):      " << fixed << "/" << setup.trials << " trials corrupted\n"
        << "   without it, poison adaptor on: " << poisoned << "/" << setup.trials
        << " trials corrupted (freed memory is overwritten\n"
        << "   on the freeing stream and handed out again at once, so the bug shows every time)\n"
        << "   Fix: allocator.record_stream(buffer, side) before the free: the allocator then holds the\n"
        << "   block until `side`'s work is done.\n\n";
  }
  return {{"lifetime_trials", std::to_string(setup.trials)},
          {"lifetime_buggy_corrupted", std::to_string(buggy)},
          {"lifetime_fixed_corrupted", std::to_string(fixed)},
          {"lifetime_poison_corrupted", std::to_string(poisoned)}};
}

}  // namespace streamsafe::cli
