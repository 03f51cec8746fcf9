// Scenarios as op logs (format version 1; version 2 where they destroy streams): each buggy log
// is reported with the right kinds and lines, its fixed version reports nothing, and `enforce`
// leaves only what it cannot fix while counting what it inserted.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "scenario_support.hpp"

namespace streamsafe::hazard {
namespace {

using testing::check_file;

struct expected_finding {
  hazard_kind kind;
  std::uint64_t first_line;
  std::uint64_t second_line;
  friend bool operator==(const expected_finding&, const expected_finding&) = default;
  friend std::ostream& operator<<(std::ostream& out, const expected_finding& f) {
    return out << kind_name(f.kind) << ' ' << f.first_line << "->" << f.second_line;
  }
};

struct scenario {
  std::string name;  // <name>_buggy.jsonl and <name>_fixed.jsonl
  std::vector<expected_finding> findings;
  insertion_counts enforce_inserts;
};

std::ostream& operator<<(std::ostream& out, const scenario& s) { return out << s.name; }

const hazard_kind race = hazard_kind::race;
const hazard_kind reuse_race = hazard_kind::reuse_race;
const hazard_kind host_race = hazard_kind::host_race;

// insertion_counts: {stream waits, host syncs, record_streams}
const std::vector<scenario> scenarios = {
    {"producer_consumer", {{race, 5, 6}}, {1, 0, 0}},
    {"side_read_no_record", {{reuse_race, 8, 11}}, {0, 0, 1}},
    {"record_no_wait", {{race, 5, 6}}, {1, 0, 0}},
    {"wait_no_record", {{reuse_race, 8, 11}}, {0, 0, 1}},
    {"event_before_write", {{race, 7, 9}}, {1, 0, 0}},
    {"wait_never_recorded", {{hazard_kind::wait_unrecorded, 6, 6}, {race, 5, 7}}, {1, 0, 0}},
    {"d2h_read_before_sync", {{host_race, 5, 6}}, {0, 1, 0}},
    {"host_overwrite_pinned", {{host_race, 5, 6}}, {0, 1, 0}},
    {"views_at_offsets", {{race, 5, 7}}, {1, 0, 0}},
    {"four_stream_chain", {{race, 12, 17}}, {1, 0, 0}},
    {"redundant_wait", {{hazard_kind::redundant_wait, 7, 7}}, {0, 0, 0}},
    {"use_after_free", {{hazard_kind::use_after_free, 5, 6}}, {0, 0, 0}},
    {"reuse_on_other_stream", {{reuse_race, 5, 8}}, {1, 0, 0}},
    // version 2: a destroyed stream's unfinished work races with the next stream given its id
    {"destroyed_stream", {{race, 3, 5}}, {1, 0, 0}},
};

std::vector<expected_finding> found(const std::vector<hazard>& hazards) {
  std::vector<expected_finding> out;
  for (const auto& h : hazards) out.push_back({h.kind, h.first.line, h.second.line});
  return out;
}

// What enforce cannot fix: informational findings and touching freed memory.
std::vector<expected_finding> unfixable(const std::vector<expected_finding>& findings) {
  std::vector<expected_finding> out;
  for (const auto& f : findings) {
    if (is_informational(f.kind) || f.kind == hazard_kind::use_after_free) out.push_back(f);
  }
  return out;
}

class Scenario : public ::testing::TestWithParam<scenario> {};

TEST_P(Scenario, BuggyVersionReportsTheRightKindsAndLines) {
  const auto run = check_file(GetParam().name + "_buggy", policy::report);
  EXPECT_EQ(found(run.hazards), GetParam().findings);
}

TEST_P(Scenario, FixedVersionReportsNothing) {
  const auto run = check_file(GetParam().name + "_fixed", policy::report);
  EXPECT_EQ(found(run.hazards), std::vector<expected_finding>{});
  EXPECT_EQ(run.summary.hazards + run.summary.informational, 0U);
}

TEST_P(Scenario, EnforceLeavesOnlyWhatItCannotFixAndCountsItsInsertions) {
  const auto run = check_file(GetParam().name + "_buggy", policy::enforce);
  EXPECT_EQ(found(run.hazards), unfixable(GetParam().findings));
  const auto& want = GetParam().enforce_inserts;
  EXPECT_EQ(run.summary.inserted.stream_waits, want.stream_waits);
  EXPECT_EQ(run.summary.inserted.host_syncs, want.host_syncs);
  EXPECT_EQ(run.summary.inserted.record_streams, want.record_streams);
}

TEST_P(Scenario, EnforceInsertsNothingIntoTheFixedVersion) {
  const auto run = check_file(GetParam().name + "_fixed", policy::enforce);
  EXPECT_EQ(run.summary.inserted.total(), 0U);
}

INSTANTIATE_TEST_SUITE_P(Issue4, Scenario, ::testing::ValuesIn(scenarios),
                         [](const auto& info) { return info.param.name; });

TEST(ScenarioDetails, ViewsAtOffsetsReportOnlyTheOverlappingBytes) {
  const auto run = check_file("views_at_offsets_buggy", policy::report);
  ASSERT_EQ(run.hazards.size(), 1U);
  EXPECT_EQ(run.hazards[0].range, (byte_range{4352, 256}));
}

TEST(ScenarioDetails, CountsOpLinesOnly) {
  const auto run = check_file("four_stream_chain_fixed", policy::report);
  EXPECT_EQ(run.summary.ops, 27U);  // 28 lines minus the version line
}

}  // namespace
}  // namespace streamsafe::hazard
