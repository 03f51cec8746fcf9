// chunk_packer: where stitched segments go inside physical chunks. The planning rules (fewest new
// chunks, longest free end as head, best-fit free start as tail, smallest range for small
// segments) on hand-built layouts, the errors on misuse, and a randomized run against a
// byte-ownership model.
#include "alloc/chunk_packer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <set>
#include <vector>

#include "streamsafe/error.hpp"

namespace streamsafe::detail {

// gtest prints and compares pieces.
inline bool operator==(const chunk_piece& a, const chunk_piece& b) {
  return a.chunk == b.chunk && a.begin == b.begin && a.end == b.end;
}
inline void PrintTo(const chunk_piece& p, std::ostream* out) {
  *out << "{chunk " << p.chunk << ", [" << p.begin << ", " << p.end << ")}";
}

namespace {

// Small chunks keep the layouts readable; the packer only needs a multiple of 512.
constexpr std::size_t g = 8192;

std::size_t total_bytes(const std::vector<chunk_piece>& pieces) {
  std::size_t sum = 0;
  for (const chunk_piece& p : pieces) sum += p.end - p.begin;
  return sum;
}

std::vector<chunk_piece> planned_pieces(const chunk_packer::plan& plan) {
  std::vector<chunk_piece> out;
  for (const auto& p : plan.pieces) out.push_back(p.piece);
  return out;
}

// Takes `chunks` new chunks wholly (handles 1, 2, ...); their indices are 0, 1, ... on a new packer.
std::vector<chunk_piece> fill_fresh_chunks(chunk_packer& packer, std::size_t chunks, physical_handle first_handle = 1) {
  const chunk_packer::plan plan = packer.plan_segment(chunks * g);
  EXPECT_EQ(plan.fresh_chunks, chunks);
  std::vector<physical_handle> handles;
  for (std::size_t i = 0; i < chunks; ++i) handles.push_back(first_handle + i);
  return packer.take(plan, handles);
}

TEST(ChunkPackerTest, FirstSegmentOnEmptyPackerTakesFreshChunksInOrder) {
  chunk_packer packer(g);
  const chunk_packer::plan plan = packer.plan_segment(2 * g + 1024);
  EXPECT_EQ(plan.fresh_chunks, 3u);
  ASSERT_EQ(plan.pieces.size(), 3u);
  for (const auto& p : plan.pieces) EXPECT_TRUE(p.fresh);
  EXPECT_EQ(plan.pieces[0].piece.begin, 0u);
  EXPECT_EQ(plan.pieces[0].piece.end, g);
  EXPECT_EQ(plan.pieces[1].piece.begin, 0u);
  EXPECT_EQ(plan.pieces[1].piece.end, g);
  EXPECT_EQ(plan.pieces[2].piece.begin, 0u);
  EXPECT_EQ(plan.pieces[2].piece.end, 1024u);

  const std::vector<physical_handle> handles{11, 12, 13};
  const std::vector<chunk_piece> taken = packer.take(plan, handles);
  EXPECT_EQ(taken, (std::vector<chunk_piece>{{0, 0, g}, {1, 0, g}, {2, 0, 1024}}));
  EXPECT_EQ(total_bytes(taken), 2 * g + 1024);
  // Fresh chunks get the handles in plan order.
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(packer.handle(taken[i].chunk), handles[i]);
  EXPECT_EQ(packer.chunks_held(), 3u);
  EXPECT_EQ(packer.wholly_free_chunks(), 0u);
  EXPECT_EQ(packer.free_bytes(), g - 1024);
  EXPECT_TRUE(packer.is_free({2, 1024, g}));
  EXPECT_FALSE(packer.is_free({2, 512, 1536}));
}

TEST(ChunkPackerTest, SegmentSmallerThanAChunkTakesTheStartOfAFreshChunk) {
  chunk_packer packer(g);
  const chunk_packer::plan plan = packer.plan_segment(3072);
  EXPECT_EQ(plan.fresh_chunks, 1u);
  ASSERT_EQ(plan.pieces.size(), 1u);
  EXPECT_TRUE(plan.pieces[0].fresh);

  const std::vector<physical_handle> handles{7};
  const std::vector<chunk_piece> taken = packer.take(plan, handles);
  EXPECT_EQ(taken, (std::vector<chunk_piece>{{0, 0, 3072}}));
  // The rest of the chunk is a free end, for a later segment's head.
  EXPECT_EQ(packer.free_bytes(), g - 3072);
  EXPECT_TRUE(packer.is_free({0, 3072, g}));
  EXPECT_EQ(packer.chunks_held(), 1u);
  EXPECT_EQ(packer.wholly_free_chunks(), 0u);
}

TEST(ChunkPackerTest, SegmentStitchesAFreeEndWholeChunksAndAFreeStartWithoutNewChunks) {
  chunk_packer packer(g);
  fill_fresh_chunks(packer, 3);  // chunks 0 (A), 1 (B), 2 (C), all used
  constexpr std::size_t s = 3072;        // A's free end
  constexpr std::size_t b_start = 2048;  // B's free start
  constexpr std::size_t r = 1536;        // the tail: fits B's free start with 512 to spare
  const std::vector<chunk_piece> freed{{0, g - s, g}, {1, 0, b_start}, {2, 0, g}};
  packer.give_back(freed);
  EXPECT_EQ(packer.wholly_free_chunks(), 1u);

  const chunk_packer::plan plan = packer.plan_segment(s + g + r);
  EXPECT_EQ(plan.fresh_chunks, 0u);
  for (const auto& p : plan.pieces) EXPECT_FALSE(p.fresh);
  EXPECT_EQ(planned_pieces(plan), (std::vector<chunk_piece>{{0, g - s, g}, {2, 0, g}, {1, 0, r}}));

  const std::vector<chunk_piece> taken = packer.take(plan, {});
  EXPECT_EQ(taken, planned_pieces(plan));
  EXPECT_EQ(packer.chunks_held(), 3u);
  // Only what the tail left of B's free start is free.
  EXPECT_EQ(packer.free_bytes(), b_start - r);
  EXPECT_TRUE(packer.is_free({1, r, b_start}));
}

TEST(ChunkPackerTest, LongestFreeEndIsTheHeadWhenNewChunkCountsTie) {
  chunk_packer packer(g);
  fill_fresh_chunks(packer, 2);
  const std::vector<chunk_piece> freed{{0, g - 1024, g}, {1, g - 3072, g}};
  packer.give_back(freed);

  // Either free end (or none) needs one new chunk; the longer free end wins.
  const chunk_packer::plan plan = packer.plan_segment(g);
  EXPECT_EQ(plan.fresh_chunks, 1u);
  ASSERT_EQ(plan.pieces.size(), 2u);
  EXPECT_FALSE(plan.pieces[0].fresh);
  EXPECT_EQ(plan.pieces[0].piece, (chunk_piece{1, g - 3072, g}));
  EXPECT_TRUE(plan.pieces[1].fresh);
  EXPECT_EQ(plan.pieces[1].piece.begin, 0u);
  EXPECT_EQ(plan.pieces[1].piece.end, g - 3072);
}

TEST(ChunkPackerTest, TailTakesTheSmallestFreeStartThatFits) {
  chunk_packer packer(g);
  fill_fresh_chunks(packer, 3);
  // Given back out of size order, so that best fit is not just the list order.
  const std::vector<chunk_piece> freed{{2, 0, 3072}, {0, 0, 1024}, {1, 0, 2048}};
  packer.give_back(freed);

  // No free ends: each segment is a tail alone.
  EXPECT_EQ(planned_pieces(packer.plan_segment(1536)), (std::vector<chunk_piece>{{1, 0, 1536}}));
  EXPECT_EQ(planned_pieces(packer.plan_segment(1024)), (std::vector<chunk_piece>{{0, 0, 1024}}));
  EXPECT_EQ(planned_pieces(packer.plan_segment(2560)), (std::vector<chunk_piece>{{2, 0, 2560}}));
  EXPECT_EQ(packer.plan_segment(512).pieces.at(0).piece, (chunk_piece{0, 0, 512}));

  // With a whole new chunk in front, the tail still goes to the best fit.
  const chunk_packer::plan plan = packer.plan_segment(g + 1536);
  EXPECT_EQ(plan.fresh_chunks, 1u);
  ASSERT_EQ(plan.pieces.size(), 2u);
  EXPECT_TRUE(plan.pieces[0].fresh);
  EXPECT_FALSE(plan.pieces[1].fresh);
  EXPECT_EQ(plan.pieces[1].piece, (chunk_piece{1, 0, 1536}));
}

TEST(ChunkPackerTest, WhollyFreeChunksAreUsedBeforeNewOnesAndCanBeRemoved) {
  chunk_packer packer(g);
  const std::vector<chunk_piece> first = fill_fresh_chunks(packer, 2, 101);
  packer.give_back(first);
  EXPECT_EQ(packer.wholly_free_chunks(), 2u);
  EXPECT_EQ(packer.free_bytes(), 2 * g);

  // Two whole chunks' worth: both free chunks, no new one.
  const chunk_packer::plan reuse = packer.plan_segment(g + 1024);
  EXPECT_EQ(reuse.fresh_chunks, 0u);
  ASSERT_EQ(reuse.pieces.size(), 2u);
  std::set<std::size_t> chunks;
  for (const auto& p : reuse.pieces) {
    EXPECT_FALSE(p.fresh);
    chunks.insert(p.piece.chunk);
  }
  EXPECT_EQ(chunks, (std::set<std::size_t>{0, 1}));

  // Three chunks' worth with two free: one new chunk, after the free ones.
  const chunk_packer::plan mixed = packer.plan_segment(3 * g);
  EXPECT_EQ(mixed.fresh_chunks, 1u);
  ASSERT_EQ(mixed.pieces.size(), 3u);
  EXPECT_FALSE(mixed.pieces[0].fresh);
  EXPECT_FALSE(mixed.pieces[1].fresh);
  EXPECT_TRUE(mixed.pieces[2].fresh);
  const std::vector<physical_handle> handle{103};
  const std::vector<chunk_piece> second = packer.take(mixed, handle);
  EXPECT_EQ(packer.chunks_held(), 3u);
  EXPECT_EQ(packer.handle(second[2].chunk), 103u);
  EXPECT_EQ(packer.wholly_free_chunks(), 0u);
  EXPECT_EQ(packer.free_bytes(), 0u);

  packer.give_back(second);
  EXPECT_EQ(packer.wholly_free_chunks(), 3u);
  std::vector<physical_handle> removed = packer.remove_wholly_free();
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<physical_handle>{101, 102, 103}));
  EXPECT_EQ(packer.chunks_held(), 0u);
  EXPECT_EQ(packer.wholly_free_chunks(), 0u);
  EXPECT_EQ(packer.free_bytes(), 0u);

  // Empty again: the next segment needs new chunks, which reuse the freed indices.
  const chunk_packer::plan again = packer.plan_segment(g);
  EXPECT_EQ(again.fresh_chunks, 1u);
  const std::vector<physical_handle> new_handle{104};
  const std::vector<chunk_piece> third = packer.take(again, new_handle);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_LT(third[0].chunk, 3u);
  EXPECT_EQ(packer.handle(third[0].chunk), 104u);
  EXPECT_EQ(packer.chunks_held(), 1u);
}

TEST(ChunkPackerTest, PartlyUsedChunksAreNotRemovedWithTheWhollyFreeOnes) {
  chunk_packer packer(g);
  const std::vector<chunk_piece> taken = fill_fresh_chunks(packer, 2, 5);
  const std::vector<chunk_piece> first_and_half{{0, 0, g}, {1, 0, g / 2}};
  packer.give_back(first_and_half);
  EXPECT_EQ(packer.remove_wholly_free(), (std::vector<physical_handle>{5}));
  EXPECT_EQ(packer.chunks_held(), 1u);
  EXPECT_EQ(packer.free_bytes(), g / 2);
  std::vector<physical_handle> all = packer.remove_all();
  EXPECT_EQ(all, (std::vector<physical_handle>{6}));
  EXPECT_EQ(packer.chunks_held(), 0u);
}

// Chunk 0: used [0, 1024) and [3072, 4096); free [1024, 3072) (middle, 2048) and [4096, 8192) (end,
// 4096). Chunk 1: free [0, 3072) (start, 3072), used after. Chunk 2: wholly free.
struct SmallSegmentTest : ::testing::Test {
  chunk_packer packer{g};
  void SetUp() override {
    fill_fresh_chunks(packer, 3);
    const std::vector<chunk_piece> freed{{0, 1024, 3072}, {0, 4096, g}, {1, 0, 3072}, {2, 0, g}};
    packer.give_back(freed);
  }
};

TEST_F(SmallSegmentTest, SmallestSufficientRangeOfAPartlyUsedChunkIsTakenWholeWithoutWindow) {
  const chunk_packer::plan middle = packer.plan_small_segment(1536, 0);
  EXPECT_EQ(middle.fresh_chunks, 0u);
  ASSERT_EQ(middle.pieces.size(), 1u);
  EXPECT_FALSE(middle.pieces[0].fresh);
  EXPECT_EQ(middle.pieces[0].piece, (chunk_piece{0, 1024, 3072}));
  EXPECT_EQ(planned_pieces(packer.plan_small_segment(2560, 0)), (std::vector<chunk_piece>{{1, 0, 3072}}));
  EXPECT_EQ(planned_pieces(packer.plan_small_segment(3584, 0)), (std::vector<chunk_piece>{{0, 4096, g}}));
}

TEST_F(SmallSegmentTest, WindowIsCutNextToTheUsedNeighbour) {
  // Middle range: at its start (used bytes before it).
  EXPECT_EQ(planned_pieces(packer.plan_small_segment(512, 1024)), (std::vector<chunk_piece>{{0, 1024, 2048}}));
  // Free start: at its end, so [0, 512) stays a free start.
  EXPECT_EQ(planned_pieces(packer.plan_small_segment(2560, 2560)), (std::vector<chunk_piece>{{1, 512, 3072}}));
  // Free end: at its start, so [7680, 8192) stays a free end.
  EXPECT_EQ(planned_pieces(packer.plan_small_segment(3584, 3584)), (std::vector<chunk_piece>{{0, 4096, 7680}}));
  // A window smaller than the request is the request; one larger than the range is the range.
  EXPECT_EQ(planned_pieces(packer.plan_small_segment(1024, 512)), (std::vector<chunk_piece>{{0, 1024, 2048}}));
  EXPECT_EQ(planned_pieces(packer.plan_small_segment(1024, 4 * g)), (std::vector<chunk_piece>{{0, 1024, 3072}}));

  const chunk_packer::plan plan = packer.plan_small_segment(2560, 2560);
  const std::vector<chunk_piece> taken = packer.take(plan, {});
  EXPECT_EQ(taken, (std::vector<chunk_piece>{{1, 512, 3072}}));
  EXPECT_TRUE(packer.is_free({1, 0, 512}));
}

TEST_F(SmallSegmentTest, FallsBackToAWhollyFreeChunkThenToANewOne) {
  // Larger than every partly used range: the wholly free chunk 2, from its start.
  EXPECT_EQ(planned_pieces(packer.plan_small_segment(4608, 0)), (std::vector<chunk_piece>{{2, 0, g}}));
  const chunk_packer::plan cut = packer.plan_small_segment(4608, 6144);
  EXPECT_EQ(cut.fresh_chunks, 0u);
  EXPECT_EQ(planned_pieces(cut), (std::vector<chunk_piece>{{2, 0, 6144}}));

  EXPECT_EQ(packer.remove_chunk(2), 3u);  // fill_fresh_chunks gave it handle 3
  const chunk_packer::plan fresh = packer.plan_small_segment(4608, 6144);
  EXPECT_EQ(fresh.fresh_chunks, 1u);
  ASSERT_EQ(fresh.pieces.size(), 1u);
  EXPECT_TRUE(fresh.pieces[0].fresh);
  EXPECT_EQ(fresh.pieces[0].piece.begin, 0u);
  EXPECT_EQ(fresh.pieces[0].piece.end, 6144u);
  const std::vector<physical_handle> handle{42};
  const std::vector<chunk_piece> taken = packer.take(fresh, handle);
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].chunk, 2u);  // the removed chunk's index is reused
  EXPECT_EQ(packer.handle(2), 42u);
  EXPECT_TRUE(packer.is_free({2, 6144, g}));
}

TEST_F(SmallSegmentTest, RequestLargerThanAChunkIsAUsageError) {
  EXPECT_THROW((void)packer.plan_small_segment(g + 512, 0), usage_error);
}

TEST(ChunkPackerTest, MisuseThrowsUsageErrorAndLeavesThePackerUsable) {
  chunk_packer packer(g);
  const std::vector<physical_handle> handle{1};
  const std::vector<chunk_piece> used = packer.take(packer.plan_segment(1024), handle);  // [0, 1024) of chunk 0

  // Taking bytes partly or wholly in use.
  const std::vector<chunk_piece> overlapping{{0, 512, 1536}};
  EXPECT_THROW(packer.take(overlapping), usage_error);
  EXPECT_THROW(packer.take(used), usage_error);
  // Giving back bytes free already, wholly or in part.
  const std::vector<chunk_piece> free_already{{0, 2048, 4096}};
  EXPECT_THROW(packer.give_back(free_already), usage_error);
  const std::vector<chunk_piece> half_free{{0, 512, 2048}};
  EXPECT_THROW(packer.give_back(half_free), usage_error);
  // A plan's new chunks need one handle each.
  const chunk_packer::plan needs_one = packer.plan_segment(g);
  ASSERT_EQ(needs_one.fresh_chunks, 1u);
  EXPECT_THROW((void)packer.take(needs_one, {}), usage_error);
  // Removing a chunk twice.
  const std::vector<chunk_piece> second = packer.take(needs_one, std::vector<physical_handle>{2});
  packer.give_back(second);
  EXPECT_EQ(packer.remove_chunk(second.back().chunk), 2u);
  EXPECT_THROW((void)packer.remove_chunk(second.back().chunk), usage_error);

  // Nothing changed: [0, 1024) of chunk 0 is still the only used bytes.
  EXPECT_EQ(packer.chunks_held(), 1u);
  EXPECT_EQ(packer.free_bytes(), g - 1024);
  EXPECT_TRUE(packer.is_free({0, 1024, g}));
  EXPECT_FALSE(packer.is_free({0, 0, 512}));

  // And it still works.
  const std::vector<chunk_piece> rest = packer.take(packer.plan_segment(g - 1024 + g), std::vector<physical_handle>{3});
  EXPECT_EQ(rest.front(), (chunk_piece{0, 1024, g}));  // the free end is the head
  EXPECT_EQ(total_bytes(rest), 2 * g - 1024);
  packer.give_back(rest);
  packer.give_back(used);
  EXPECT_EQ(packer.wholly_free_chunks(), 2u);
  EXPECT_EQ(packer.free_bytes(), 2 * g);
}

// ---- Randomized: the packer against a model of who owns each 512-byte unit. ----

class reference_model {
 public:
  static constexpr std::size_t unit = 512;
  static constexpr std::size_t units = 4096 / unit;  // the property test's granularity
  static constexpr std::size_t granularity = units * unit;

  struct chunk_state {
    bool held = false;
    physical_handle handle = 0;
    std::vector<bool> used = std::vector<bool>(units, false);
  };

  std::vector<chunk_state> chunks;

  [[nodiscard]] bool held(std::size_t c) const { return c < chunks.size() && chunks[c].held; }
  [[nodiscard]] bool wholly_free(std::size_t c) const {
    return held(c) && std::none_of(chunks[c].used.begin(), chunks[c].used.end(), [](bool u) { return u; });
  }
  [[nodiscard]] bool partly_used(std::size_t c) const {
    return held(c) && !wholly_free(c) && std::any_of(chunks[c].used.begin(), chunks[c].used.end(), [](bool u) { return !u; });
  }
  [[nodiscard]] bool all_free(const chunk_piece& p) const {
    for (std::size_t u = p.begin / unit; u < p.end / unit; ++u) {
      if (chunks[p.chunk].used[u]) return false;
    }
    return true;
  }
  void add(std::size_t c, physical_handle handle) {
    if (c >= chunks.size()) chunks.resize(c + 1);
    chunks[c] = chunk_state{true, handle, std::vector<bool>(units, false)};
  }
  void set(const chunk_piece& p, bool used) {
    for (std::size_t u = p.begin / unit; u < p.end / unit; ++u) chunks[p.chunk].used[u] = used;
  }
  [[nodiscard]] std::size_t held_count() const {
    return static_cast<std::size_t>(std::count_if(chunks.begin(), chunks.end(), [](const chunk_state& c) { return c.held; }));
  }
  [[nodiscard]] std::size_t wholly_free_count() const {
    std::size_t n = 0;
    for (std::size_t c = 0; c < chunks.size(); ++c) n += wholly_free(c) ? 1 : 0;
    return n;
  }
  [[nodiscard]] std::size_t free_bytes() const {
    std::size_t n = 0;
    for (const chunk_state& c : chunks) {
      if (c.held) n += unit * static_cast<std::size_t>(std::count(c.used.begin(), c.used.end(), false));
    }
    return n;
  }
  /// The maximal free runs of chunk `c`, as pieces.
  [[nodiscard]] std::vector<chunk_piece> free_runs(std::size_t c) const {
    std::vector<chunk_piece> runs;
    for (std::size_t u = 0; u < units;) {
      if (chunks[c].used[u]) {
        ++u;
        continue;
      }
      std::size_t end = u;
      while (end < units && !chunks[c].used[end]) ++end;
      runs.push_back({c, u * unit, end * unit});
      u = end;
    }
    return runs;
  }
  /// The maximal free run holding `p`.
  [[nodiscard]] chunk_piece run_around(const chunk_piece& p) const {
    for (const chunk_piece& r : free_runs(p.chunk)) {
      if (r.begin <= p.begin && p.end <= r.end) return r;
    }
    ADD_FAILURE() << "no free run holds the piece";
    return p;
  }
};

TEST(ChunkPackerPropertyTest, RandomOperationsKeepSegmentsDisjointAndAccountingExact) {
  using model = reference_model;
  constexpr std::size_t gran = model::granularity;
  chunk_packer packer(gran);
  model ref;
  std::mt19937_64 rng(20240611);
  const auto uniform = [&](std::size_t lo, std::size_t hi) { return std::uniform_int_distribution<std::size_t>(lo, hi)(rng); };
  std::vector<std::vector<chunk_piece>> live;  // segments (or hand-taken pieces) in use
  std::vector<chunk_piece> given_back;          // since the last full check
  physical_handle next_handle = 1000;
  std::size_t fresh_total = 0;
  std::size_t window_cuts = 0;  // small segments cut shorter than their range: the cut path ran
  std::size_t stitched_heads = 0;  // segments starting in the free end of a partly used chunk
  std::size_t stitched_tails = 0;  // segments ending in the free start of a partly used chunk

  // Takes a plan, checking the packer's answer against the model, and records the segment.
  const auto take_plan = [&](const chunk_packer::plan& plan) {
    std::vector<physical_handle> handles;
    for (std::size_t i = 0; i < plan.fresh_chunks; ++i) handles.push_back(next_handle++);
    const std::vector<chunk_piece> taken = packer.take(plan, handles);
    EXPECT_EQ(taken.size(), plan.pieces.size());
    std::size_t next_fresh = 0;
    for (std::size_t i = 0; i < taken.size(); ++i) {
      const chunk_piece& p = taken[i];
      EXPECT_EQ(p.begin, plan.pieces[i].piece.begin);
      EXPECT_EQ(p.end, plan.pieces[i].piece.end);
      if (plan.pieces[i].fresh) {
        // A new chunk goes to an index no held chunk has, with its handle.
        EXPECT_FALSE(ref.held(p.chunk)) << "new chunk at held index " << p.chunk;
        ref.add(p.chunk, handles[next_fresh]);
        EXPECT_EQ(packer.handle(p.chunk), handles[next_fresh]);
        ++next_fresh;
      } else {
        EXPECT_EQ(p.chunk, plan.pieces[i].piece.chunk);
        EXPECT_TRUE(ref.held(p.chunk)) << "piece in chunk " << p.chunk << " that is not held";
      }
      ASSERT_TRUE(p.begin < p.end && p.end <= gran && p.begin % model::unit == 0 && p.end % model::unit == 0)
          << "piece [" << p.begin << ", " << p.end << ")";
      // No two live segments share a byte.
      ASSERT_TRUE(ref.all_free(p)) << "chunk " << p.chunk << " bytes [" << p.begin << ", " << p.end
                                   << ") were not free";
      ref.set(p, true);
    }
    fresh_total += plan.fresh_chunks;
    live.push_back(taken);
  };

  const auto full_check = [&] {
    ASSERT_EQ(packer.chunks_held(), ref.held_count());
    ASSERT_EQ(packer.wholly_free_chunks(), ref.wholly_free_count());
    ASSERT_EQ(packer.free_bytes(), ref.free_bytes());
    for (const auto& segment : live) {
      for (const chunk_piece& p : segment) ASSERT_FALSE(packer.is_free(p));
    }
    for (const chunk_piece& p : given_back) ASSERT_EQ(packer.is_free(p), ref.held(p.chunk) && ref.all_free(p));
    given_back.clear();
    // The packer's free ranges are exactly the model's maximal free runs: each run is free, and
    // one unit more on either side is not.
    for (std::size_t c = 0; c < ref.chunks.size(); ++c) {
      if (!ref.held(c)) continue;
      ASSERT_EQ(packer.handle(c), ref.chunks[c].handle);
      for (const chunk_piece& r : ref.free_runs(c)) {
        ASSERT_TRUE(packer.is_free(r));
        if (r.begin != 0) { ASSERT_FALSE(packer.is_free({c, r.begin - model::unit, r.end})); }
        if (r.end != gran) { ASSERT_FALSE(packer.is_free({c, r.begin, r.end + model::unit})); }
      }
    }
  };

  constexpr int operations = 20000;
  for (int op = 0; op < operations; ++op) {
    const std::size_t dice = uniform(0, 99);
    const bool must_give_back = live.size() > 48;
    if (!must_give_back && dice < 36) {
      // A large-pool segment: 512 bytes to five chunks.
      const std::size_t bytes = model::unit * uniform(1, 5 * model::units);
      const std::size_t wholly_free_before = ref.wholly_free_count();
      const chunk_packer::plan plan = packer.plan_segment(bytes);
      std::vector<chunk_piece> pieces = planned_pieces(plan);
      ASSERT_FALSE(pieces.empty());
      ASSERT_EQ(total_bytes(pieces), bytes);
      // Contiguous in the window: the head ends at the chunk end, middles are whole, the tail
      // starts at a chunk start.
      for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (i != 0) { ASSERT_EQ(pieces[i].begin, 0u) << "piece " << i << " of " << pieces.size(); }
        if (i + 1 != pieces.size()) { ASSERT_EQ(pieces[i].end, gran) << "piece " << i << " of " << pieces.size(); }
      }
      std::size_t fresh_pieces = 0;
      for (const auto& p : plan.pieces) {
        if (!p.fresh) continue;
        ++fresh_pieces;
        ASSERT_EQ(p.piece.begin, 0u);  // a new chunk is never a head
      }
      ASSERT_EQ(fresh_pieces, plan.fresh_chunks);
      // Never more new chunks than the plainest plan: chunk-aligned from wholly free chunks.
      const std::size_t chunks_needed = (bytes + gran - 1) / gran;
      ASSERT_LE(plan.fresh_chunks, chunks_needed > wholly_free_before ? chunks_needed - wholly_free_before : 0);
      if (pieces.front().begin != 0) ++stitched_heads;
      if (!plan.pieces.back().fresh && pieces.back().begin == 0 && pieces.back().end != gran &&
          ref.partly_used(pieces.back().chunk)) {
        ++stitched_tails;
      }
      take_plan(plan);
    } else if (!must_give_back && dice < 56) {
      // A small-pool segment, with a window of none, the request, some units, or a chunk.
      const std::size_t bytes = model::unit * uniform(1, model::units);
      std::size_t window = 0;
      switch (uniform(0, 3)) {
        case 0: window = 0; break;
        case 1: window = bytes; break;
        case 2: window = model::unit * uniform(1, model::units); break;
        default: window = gran; break;
      }
      // What the model says: the smallest free run of a partly used chunk that holds `bytes`.
      std::size_t best = 0;
      for (std::size_t c = 0; c < ref.chunks.size(); ++c) {
        if (!ref.partly_used(c)) continue;
        for (const chunk_piece& r : ref.free_runs(c)) {
          const std::size_t length = r.end - r.begin;
          if (length >= bytes && (best == 0 || length < best)) best = length;
        }
      }
      const std::size_t wholly_free_before = ref.wholly_free_count();
      const chunk_packer::plan plan = packer.plan_small_segment(bytes, window);
      ASSERT_EQ(plan.pieces.size(), 1u);
      const chunk_packer::planned_piece& planned = plan.pieces[0];
      const chunk_piece& p = planned.piece;
      chunk_piece run{p.chunk, 0, gran};
      if (best != 0) {
        ASSERT_FALSE(planned.fresh);
        ASSERT_TRUE(ref.partly_used(p.chunk));
        run = ref.run_around(p);
        ASSERT_EQ(run.end - run.begin, best) << "not the smallest sufficient range";
      } else if (wholly_free_before != 0) {
        ASSERT_FALSE(planned.fresh);
        ASSERT_TRUE(ref.wholly_free(p.chunk));
      } else {
        ASSERT_TRUE(planned.fresh);
        ASSERT_EQ(plan.fresh_chunks, 1u);
      }
      const std::size_t length = run.end - run.begin;
      const std::size_t expected = window == 0 ? length : std::max(bytes, std::min(length, window));
      ASSERT_EQ(p.end - p.begin, expected);
      // Next to the used neighbour, so the run's free end or free start stays one.
      if (run.begin != 0 || run.end == gran) {
        ASSERT_EQ(p.begin, run.begin);
      } else {
        ASSERT_EQ(p.end, run.end);
      }
      if (expected < length) ++window_cuts;
      take_plan(plan);
    } else if (!must_give_back && dice < 61) {
      // Hand-taken bytes inside a free run, to fragment chunks in ways plans do not.
      std::vector<chunk_piece> runs;
      for (std::size_t c = 0; c < ref.chunks.size(); ++c) {
        if (!ref.held(c)) continue;
        for (const chunk_piece& r : ref.free_runs(c)) runs.push_back(r);
      }
      if (runs.empty()) continue;
      const chunk_piece r = runs[uniform(0, runs.size() - 1)];
      const std::size_t first = uniform(r.begin / model::unit, r.end / model::unit - 1);
      const std::size_t last = uniform(first + 1, r.end / model::unit);
      const std::vector<chunk_piece> piece{{r.chunk, first * model::unit, last * model::unit}};
      ASSERT_TRUE(packer.is_free(piece[0]));
      packer.take(piece);
      ref.set(piece[0], true);
      live.push_back(piece);
    } else if (dice < 63) {
      // Misuse: bytes one of which is in use cannot be taken; bytes one of which is free cannot be
      // given back. Either way nothing changes.
      std::vector<chunk_piece> used_units, free_units;
      for (std::size_t c = 0; c < ref.chunks.size(); ++c) {
        if (!ref.held(c)) continue;
        for (std::size_t u = 0; u < model::units; ++u) {
          (ref.chunks[c].used[u] ? used_units : free_units).push_back({c, u * model::unit, (u + 1) * model::unit});
        }
      }
      const std::size_t free_before = packer.free_bytes();
      if (!used_units.empty()) {
        const chunk_piece u = used_units[uniform(0, used_units.size() - 1)];
        const std::vector<chunk_piece> bad{{u.chunk, model::unit * uniform(0, u.begin / model::unit),
                                            model::unit * uniform(u.end / model::unit, model::units)}};
        ASSERT_FALSE(packer.is_free(bad[0]));
        EXPECT_THROW(packer.take(bad), usage_error);
      }
      if (!free_units.empty()) {
        const chunk_piece f = free_units[uniform(0, free_units.size() - 1)];
        const std::vector<chunk_piece> bad{{f.chunk, model::unit * uniform(0, f.begin / model::unit),
                                            model::unit * uniform(f.end / model::unit, model::units)}};
        EXPECT_THROW(packer.give_back(bad), usage_error);
      }
      ASSERT_EQ(packer.free_bytes(), free_before);
    } else if (dice < 65) {
      // The caller lets go of wholly free chunks, all at once or one.
      std::multiset<physical_handle> expected;
      std::vector<std::size_t> free_chunks;
      for (std::size_t c = 0; c < ref.chunks.size(); ++c) {
        if (!ref.wholly_free(c)) continue;
        expected.insert(ref.chunks[c].handle);
        free_chunks.push_back(c);
      }
      if (uniform(0, 1) == 0) {
        const std::vector<physical_handle> removed = packer.remove_wholly_free();
        ASSERT_EQ(std::multiset<physical_handle>(removed.begin(), removed.end()), expected);
        for (const std::size_t c : free_chunks) ref.chunks[c].held = false;
      } else if (!free_chunks.empty()) {
        const std::size_t c = free_chunks[uniform(0, free_chunks.size() - 1)];
        ASSERT_EQ(packer.remove_chunk(c), ref.chunks[c].handle);
        ref.chunks[c].held = false;
      }
      std::erase_if(given_back, [&](const chunk_piece& p) { return !ref.held(p.chunk); });
    } else if (!live.empty()) {
      // A segment ends.
      const std::size_t i = uniform(0, live.size() - 1);
      const std::vector<chunk_piece> segment = live[i];
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      for (const chunk_piece& p : segment) ASSERT_FALSE(packer.is_free(p));
      packer.give_back(segment);
      for (const chunk_piece& p : segment) {
        ref.set(p, false);
        ASSERT_TRUE(packer.is_free(p));
        given_back.push_back(p);
      }
    }
    if (op % 64 == 0) {
      full_check();
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  full_check();

  // Everything given back: every chunk held is wholly free.
  for (const auto& segment : live) {
    packer.give_back(segment);
    for (const chunk_piece& p : segment) ref.set(p, false);
  }
  live.clear();
  EXPECT_EQ(packer.wholly_free_chunks(), packer.chunks_held());
  EXPECT_EQ(packer.free_bytes(), packer.chunks_held() * gran);
  std::multiset<physical_handle> expected;
  for (const auto& c : ref.chunks) {
    if (c.held) expected.insert(c.handle);
  }
  const std::vector<physical_handle> removed = packer.remove_wholly_free();
  EXPECT_EQ(std::multiset<physical_handle>(removed.begin(), removed.end()), expected);
  EXPECT_EQ(packer.chunks_held(), 0u);

  // The run exercised what it is for.
  EXPECT_GT(fresh_total, 0u);
  EXPECT_GT(window_cuts, 0u);
  EXPECT_GT(stitched_heads, 0u);
  EXPECT_GT(stitched_tails, 0u);
}

}  // namespace
}  // namespace streamsafe::detail
