// engine::unmap and engine::map: old-lifetime accesses follow physical bytes to a new address
// until the host has seen them finish (docs/hazards.md, docs/oplog.md version 3).
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "streamsafe/hazard/engine.hpp"

namespace streamsafe::hazard {
namespace {

constexpr stream_id owner{1};
constexpr stream_id side{2};
constexpr std::uint64_t old_at = 1 << 20;
constexpr std::uint64_t new_at = 8 << 20;
constexpr std::uint64_t piece = 4096;

class EngineUnmapped : public ::testing::Test {
 protected:
  engine model{policy::report};
  std::uint64_t line = 0;

  op_site at(std::string_view name) { return op_site{model.label(name, "t.cpp:1"), ++line}; }
  void write(stream_id s, byte_range r, std::string_view name) { (void)model.access(s, {}, std::array{r}, at(name)); }
  /// A block of the owner's that the side stream writes without ordering, freed without
  /// record_stream, then given back to the device.
  void side_write_then_unmap() {
    model.alloc(old_at, piece, owner, at("alloc"));
    write(side, {old_at, piece}, "side_write");
    (void)model.free(old_at, at("free"));
    model.stream_sync(owner, at("sync"));  // what the allocator does before it unmaps
    model.unmap(old_at, piece, at("unmap"));
  }
  std::vector<hazard_kind> kinds() const {
    std::vector<hazard_kind> out;
    for (const auto& h : model.hazards()) out.push_back(h.kind);
    return out;
  }
};

TEST_F(EngineUnmapped, AnUnseenAccessFollowsTheBytesToTheirNewAddress) {
  side_write_then_unmap();
  model.map(new_at, piece, at("map"));
  model.alloc(new_at, piece, owner, at("alloc_again"));
  write(owner, {new_at + 256, 256}, "new_owner_write");
  ASSERT_EQ(kinds(), std::vector{hazard_kind::reuse_race});
  EXPECT_EQ(model.hazards()[0].first.op, "side_write");
  EXPECT_EQ(model.hazards()[0].range, (byte_range{new_at + 256, 256}));  // the same offset
}

TEST_F(EngineUnmapped, AnAccessTheHostSawFinishStaysBehind) {
  side_write_then_unmap();
  model.stream_sync(side, at("sync_side"));
  model.map(new_at, piece, at("map"));
  model.alloc(new_at, piece, owner, at("alloc_again"));
  write(owner, {new_at, piece}, "new_owner_write");
  EXPECT_TRUE(model.hazards().empty());
  EXPECT_LE(model.unmapped_segments(), 1U) << "what the host saw finish is forgotten";
}

TEST_F(EngineUnmapped, TheOldAddressKeepsNothingButItsFree) {
  side_write_then_unmap();
  model.map(old_at, piece, at("map"));  // fresh memory at the old address
  model.alloc(old_at, piece, owner, at("alloc_again"));
  write(owner, {old_at, piece}, "new_owner_write");
  EXPECT_EQ(kinds(), std::vector{hazard_kind::reuse_race}) << "reported once, through the mapping";
}

TEST_F(EngineUnmapped, OffsetsPastTheGivenBackPieceGetNothing) {
  side_write_then_unmap();
  model.map(new_at, 2 * piece, at("map"));
  model.alloc(new_at, 2 * piece, owner, at("alloc_again"));
  write(owner, {new_at + piece, piece}, "new_owner_write");
  EXPECT_TRUE(model.hazards().empty());
}

TEST_F(EngineUnmapped, TouchingBytesMappedAgainBeforeAnAllocationIsAUseAfterFree) {
  side_write_then_unmap();
  model.map(new_at, piece, at("map"));
  write(owner, {new_at, piece}, "stray_write");
  EXPECT_EQ(kinds(), std::vector{hazard_kind::use_after_free});
}

}  // namespace
}  // namespace streamsafe::hazard
