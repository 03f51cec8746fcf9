// Fuzzes the allocation trace parser: any input either parses or throws parse_error; nothing
// else may escape, crash or hang. Parsed traces are replayed as a loop of two iterations on a
// small sim device, where out_of_memory is an acceptable outcome of a hostile trace.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto events = streamsafe::parse_alloc_trace(text);
    constexpr std::size_t replay_limit = 256;
    if (events.size() > replay_limit) events.resize(replay_limit);
    for (auto& e : events) e.size %= std::size_t{1} << 22;  // keep replays small
    const auto device = streamsafe::Device::sim(streamsafe::sim_options{.memory_capacity = std::size_t{64} << 20});
    (void)streamsafe::replay_alloc_trace(events, device, streamsafe::allocator_options{},
                                         streamsafe::replay_loop{.iterations = 2});
  } catch (const streamsafe::parse_error&) {
  } catch (const streamsafe::out_of_memory&) {
  }
  return 0;
}
