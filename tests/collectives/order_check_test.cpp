#include <gtest/gtest.h>

#include <vector>

#include "pipeline/collectives/order_wire.hpp"
#include "streamsafe/pipeline/collectives/collective_sequence.hpp"

namespace streamsafe::collectives {
namespace {

collective_sequence issued(std::uint64_t step, const std::vector<std::uint32_t>& buckets) {
  collective_sequence s;
  s.begin(step);
  for (auto b : buckets) s.add({.bucket = b, .bytes = 1024U * (b + 1), .name = "b" + std::to_string(b)});
  return s;
}

TEST(CollectiveSequence, HashDependsOnOrderAndStep) {
  EXPECT_EQ(issued(3, {0, 1, 2}).hash(), issued(3, {0, 1, 2}).hash());
  EXPECT_NE(issued(3, {0, 1, 2}).hash(), issued(3, {1, 0, 2}).hash());
  EXPECT_NE(issued(3, {0, 1, 2}).hash(), issued(4, {0, 1, 2}).hash());
  EXPECT_NE(issued(3, {0, 1}).hash(), issued(3, {0, 1, 2}).hash());
}

TEST(CollectiveSequence, BytesAreCompared) {
  collective_sequence a;
  collective_sequence b;
  a.begin(0);
  b.begin(0);
  a.add({.bucket = 0, .bytes = 4096});
  b.add({.bucket = 0, .bytes = 8192});
  EXPECT_NE(a.hash(), b.hash());
}

TEST(CollectiveSequence, MismatchTextNamesBothSequences) {
  EXPECT_EQ(describe_mismatch(2, 1, issued(2, {1, 0}), issued(2, {0, 1})),
            "collective order mismatch in step 2: rank 1 issued [all_reduce bucket 1 'b1' 2048 B, all_reduce bucket "
            "0 'b0' 1024 B] but rank 0 issued [all_reduce bucket 0 'b0' 1024 B, all_reduce bucket 1 'b1' 2048 B]");
}

// The nccl communicator's exchange: the same comparison on the gathered fixed-size records.
TEST(OrderWire, GatheredSequencesAreComparedAgainstRankZero) {
  const std::map<std::uint32_t, std::string> names{{0, "b0"}, {1, "b1"}, {2, "b2"}};
  std::vector<detail::WireSequence> gathered{detail::to_wire(issued(5, {0, 1, 2})), detail::to_wire(issued(5, {0, 1, 2})),
                                             detail::to_wire(issued(5, {0, 1, 2}))};
  EXPECT_EQ(detail::compare_wires(gathered.data(), 3, names), "");
  gathered[2] = detail::to_wire(issued(5, {0, 2, 1}));
  EXPECT_EQ(detail::compare_wires(gathered.data(), 3, names),
            describe_mismatch(5, 2, issued(5, {0, 2, 1}), issued(5, {0, 1, 2})));
}

TEST(OrderWire, SequencesLongerThanTheWireDifferInTheHash) {
  std::vector<std::uint32_t> long_order(detail::wire_capacity + 4);
  for (std::uint32_t i = 0; i < long_order.size(); ++i) long_order[i] = i;
  auto reordered = long_order;
  std::swap(reordered[reordered.size() - 1], reordered[reordered.size() - 2]);  // past the carried records
  std::vector<detail::WireSequence> gathered{detail::to_wire(issued(0, long_order)), detail::to_wire(issued(0, reordered))};
  EXPECT_NE(detail::compare_wires(gathered.data(), 2, {}), "");
}

}  // namespace
}  // namespace streamsafe::collectives
