#include "pipeline/collectives/order_wire.hpp"

#include <algorithm>

namespace streamsafe::collectives::detail {

WireSequence to_wire(const collective_sequence& sequence) {
  WireSequence wire;
  wire.step = sequence.step();
  wire.hash = sequence.hash();
  wire.count = static_cast<std::uint32_t>(sequence.records().size());
  const auto carried = std::min<std::size_t>(sequence.records().size(), wire_capacity);
  for (std::size_t i = 0; i < carried; ++i) {
    const auto& r = sequence.records()[i];
    wire.records[i] = WireRecord{.kind = static_cast<std::uint32_t>(r.kind), .bucket = r.bucket, .bytes = r.bytes};
  }
  return wire;
}

collective_sequence from_wire(const WireSequence& wire, const std::map<std::uint32_t, std::string>& names) {
  collective_sequence sequence;
  sequence.begin(wire.step);
  const auto carried = std::min<std::uint32_t>(wire.count, wire_capacity);
  for (std::uint32_t i = 0; i < carried; ++i) {
    const auto& r = wire.records[i];
    const auto name = names.find(r.bucket);
    sequence.add(collective_record{.kind = static_cast<collective_kind>(r.kind),
                                   .bucket = r.bucket,
                                   .bytes = r.bytes,
                                   .name = name == names.end() ? std::string() : name->second});
  }
  return sequence;
}

std::string compare_wires(const WireSequence* wires, int size, const std::map<std::uint32_t, std::string>& names) {
  for (int r = 1; r < size; ++r) {
    if (wires[r].step != wires[0].step || wires[r].hash != wires[0].hash || wires[r].count != wires[0].count) {
      return describe_mismatch(wires[r].step, r, from_wire(wires[r], names), from_wire(wires[0], names));
    }
  }
  return {};
}

}  // namespace streamsafe::collectives::detail
