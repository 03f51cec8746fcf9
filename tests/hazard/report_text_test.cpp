// The exact report text a user reads, for three scenarios.
#include "streamsafe/hazard/report_text.hpp"

#include <gtest/gtest.h>

#include "scenario_support.hpp"

namespace streamsafe::hazard {
namespace {

using testing::check_file;

hazard only_hazard(const std::string& name) {
  const auto run = check_file(name, policy::report);
  if (run.hazards.size() != 1) throw std::runtime_error(name + ": expected exactly one hazard");
  return run.hazards.front();
}

TEST(ReportText, MissingWait) {
  EXPECT_EQ(describe(only_hazard("producer_consumer_buggy")),
            "race on bytes [0x1000, 0x1400) (1024 bytes): neither access is ordered before the other\n"
            "  second: `consume` on `consumer` reads, at pc.cpp:12 (line 6)\n"
            "  first:  `fill` on `producer` writes, at pc.cpp:11 (line 5)\n"
            "  fix:    make stream `consumer` wait on an event recorded on `producer` after `fill` (pc.cpp:11)\n");
}

TEST(ReportText, MissingWaitInTheFourStreamChainNamesTheStage) {
  EXPECT_EQ(fix_text(only_hazard("four_stream_chain_buggy")),
            "make stream `compute` wait on an event recorded on `preprocess` after `normalize` (chain.cpp:16)");
}

TEST(ReportText, MissingRecordStream) {
  EXPECT_EQ(describe(only_hazard("side_read_no_record_buggy")),
            "reuse_race on bytes [0x1000, 0x1100) (256 bytes): the block at 0x1000 was reused while an old-lifetime "
            "access may still run\n"
            "  second: `overwrite` on `main` writes, at reuse.cpp:27 (line 11)\n"
            "  first:  `side_read` on `side` reads, at reuse.cpp:24 (line 8)\n"
            "  fix:    call record_stream(0x1000, `side`) before the free at reuse.cpp:25\n");
}

TEST(ReportText, HostRaceSaysWhatTheHostMustWaitFor) {
  EXPECT_EQ(fix_text(only_hazard("d2h_read_before_sync_buggy")),
            "make the host wait for `d2h` (event_sync on an event recorded after `download` (d2h.cpp:72), or "
            "stream_sync) before `host_read` (d2h.cpp:73)");
}

TEST(ReportText, JsonHasTheIssuesShape) {
  EXPECT_EQ(to_json(only_hazard("producer_consumer_buggy")),
            "{\"kind\":\"race\","
            "\"first\":{\"line\":5,\"op\":\"fill\",\"stream\":\"producer\",\"loc\":\"pc.cpp:11\",\"access\":\"write\"},"
            "\"second\":{\"line\":6,\"op\":\"consume\",\"stream\":\"consumer\",\"loc\":\"pc.cpp:12\",\"access\":\"read\"},"
            "\"range\":[4096,1024],"
            "\"fix\":\"make stream `consumer` wait on an event recorded on `producer` after `fill` (pc.cpp:11)\"}");
}

}  // namespace
}  // namespace streamsafe::hazard
