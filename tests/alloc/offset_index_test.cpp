#include "alloc/offset_index.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace streamsafe::detail {
namespace {

/// What offset_index answers, worked out by sorting.
struct sorted_answers {
  std::vector<std::size_t> distinct;
  explicit sorted_answers(std::vector<std::size_t> offsets) : distinct(std::move(offsets)) {
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  }
  [[nodiscard]] std::size_t rank(std::size_t offset) const {
    return static_cast<std::size_t>(std::lower_bound(distinct.begin(), distinct.end(), offset) - distinct.begin());
  }
};

void expect_same_answers(const std::vector<std::size_t>& offsets, const std::vector<std::size_t>& probes) {
  const offset_index index(offsets);
  const sorted_answers want(offsets);
  ASSERT_EQ(index.size(), want.distinct.size());
  for (const std::size_t p : probes) EXPECT_EQ(index.rank(p), want.rank(p)) << "rank of " << p;
  for (std::size_t k = 0; k + 1 < probes.size(); k += 2) {
    const std::size_t from = std::min(probes[k], probes[k + 1]);
    const std::size_t to = std::max(probes[k], probes[k + 1]);
    std::vector<std::size_t> got;
    index.append_between(from, to, [](std::size_t o) { return o + 1; }, got);
    std::vector<std::size_t> expected;
    for (std::size_t i = want.rank(from); i < want.distinct.size() && want.distinct[i] < to; ++i) {
      expected.push_back(want.distinct[i] + 1);
    }
    EXPECT_EQ(got, expected) << "offsets in [" << from << ", " << to << ")";
  }
}

std::vector<std::size_t> probes_around(const std::vector<std::size_t>& offsets, std::mt19937_64& rng) {
  std::vector<std::size_t> probes{0, 1};
  for (const std::size_t o : offsets) {
    probes.push_back(o);
    probes.push_back(o + 1);
    if (o > 0) probes.push_back(o - 1);
  }
  const std::size_t top = offsets.empty() ? 1 : *std::max_element(offsets.begin(), offsets.end()) + 4096;
  for (int i = 0; i < 64; ++i) probes.push_back(std::uniform_int_distribution<std::size_t>(0, top)(rng));
  std::shuffle(probes.begin(), probes.end(), rng);
  return probes;
}

TEST(OffsetIndex, PlacesOffsetsOfAPlanAsSortingThemWould) {
  // A plan's offsets: multiples of 512, repeated, packed within a footprint near their number.
  std::mt19937_64 rng(7);
  std::vector<std::size_t> offsets;
  for (int i = 0; i < 5000; ++i) offsets.push_back(512 * std::uniform_int_distribution<std::size_t>(0, 20000)(rng));
  const offset_index index(offsets);
  EXPECT_TRUE(index.as_bits());
  expect_same_answers(offsets, probes_around(offsets, rng));
}

TEST(OffsetIndex, SortsOffsetsSpreadFarWiderThanTheirNumber) {
  // A few blocks in a huge footprint: a bitmap would be far bigger than the set.
  std::mt19937_64 rng(11);
  const std::vector<std::size_t> offsets{0, 512, std::size_t{1} << 40, (std::size_t{1} << 40) + 512, std::size_t{3} << 41, 512};
  const offset_index index(offsets);
  EXPECT_FALSE(index.as_bits());
  expect_same_answers(offsets, probes_around(offsets, rng));
}

TEST(OffsetIndex, HandlesOddOffsetsEmptySetsAndZeros) {
  std::mt19937_64 rng(13);
  for (const std::vector<std::size_t>& offsets :
       {std::vector<std::size_t>{}, std::vector<std::size_t>{0}, std::vector<std::size_t>{0, 0, 0},
        std::vector<std::size_t>{3, 1, 7, 7, 200, 63, 64, 65, 127, 128}, std::vector<std::size_t>{4096, 12288, 8192}}) {
    expect_same_answers(offsets, probes_around(offsets, rng));
  }
}

TEST(OffsetIndex, AnswersEveryRandomSetAsSortingDoes) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 200; ++round) {
    const std::size_t granule = std::size_t{1} << std::uniform_int_distribution<int>(0, 12)(rng);
    const std::size_t spread = std::uniform_int_distribution<std::size_t>(1, 1 << 16)(rng);
    std::vector<std::size_t> offsets(std::uniform_int_distribution<std::size_t>(0, 300)(rng));
    for (std::size_t& o : offsets) o = granule * std::uniform_int_distribution<std::size_t>(0, spread)(rng);
    expect_same_answers(offsets, probes_around(offsets, rng));
  }
}

TEST(OffsetIndex, AnswersRandomSetsSpreadTooWideForBitsAsSortingDoes) {
  std::mt19937_64 rng(19);
  for (int round = 0; round < 100; ++round) {
    std::vector<std::size_t> offsets(std::uniform_int_distribution<std::size_t>(1, 200)(rng));
    for (std::size_t& o : offsets) o = 512 * std::uniform_int_distribution<std::size_t>(0, std::size_t{1} << 40)(rng);
    offsets.push_back(std::size_t{512} << 40);  // at least one far out: the bitmap would be huge
    EXPECT_FALSE(offset_index(offsets).as_bits());
    expect_same_answers(offsets, probes_around(offsets, rng));
  }
}

TEST(OffsetIndex, RanksAndListsNearTheTopOfTheRange) {
  constexpr std::size_t top = ~std::size_t{0};
  for (const std::vector<std::size_t>& offsets : {std::vector<std::size_t>{0, std::size_t{1} << 62},
                                                  std::vector<std::size_t>{std::size_t{1} << 63},
                                                  std::vector<std::size_t>{0, 512, std::size_t{3} << 62}}) {
    const std::vector<std::size_t> probes{0, 1, std::size_t{1} << 62, (std::size_t{1} << 63) + 1, top - 1, top,
                                          top - 1, top, (std::size_t{1} << 62) + 1, top};
    expect_same_answers(offsets, probes);
  }
}

}  // namespace
}  // namespace streamsafe::detail
