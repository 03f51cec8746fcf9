// The vocabulary of the hazard engine: who acts (streams, the host), on what (byte ranges), and
// how (read or write). Ids are enum classes so a stream can never be passed where an event is
// expected. Streams and events are opaque integers chosen by the caller (the runtime's stream id,
// or the op log's number); the engine never interprets them beyond equality.
#pragma once

#include <cstdint>

namespace streamsafe::hazard {

enum class stream_id : std::uint64_t {};
enum class event_id : std::uint64_t {};

/// An interned (op name, source location) pair; see engine::label. Cheap to copy and store.
enum class label_id : std::uint32_t {};

enum class access_mode : std::uint8_t { read, write };

/// Bytes [first, first + size). A view at an offset of an allocation is just another range.
struct byte_range {
  std::uint64_t first = 0;
  std::uint64_t size = 0;

  [[nodiscard]] constexpr std::uint64_t end() const noexcept { return first + size; }
  [[nodiscard]] constexpr bool empty() const noexcept { return size == 0; }
  friend constexpr bool operator==(const byte_range&, const byte_range&) = default;
};

/// Where an op comes from: its label, and a number that identifies the op in the program order
/// (the 1-based line in an op log; any increasing op counter in a live program).
struct op_site {
  label_id label{};
  std::uint64_t line = 0;
};

}  // namespace streamsafe::hazard
