// The op log reader and writer: v1 and v2 as docs/oplog.md defines them, and bad input named by line.
#include "streamsafe/hazard/oplog_reader.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "streamsafe/error.hpp"
#include "streamsafe/hazard/oplog_writer.hpp"

namespace streamsafe::hazard {
namespace {

const std::string header = "{\"streamsafe_oplog\":1}\n";
const std::string header_v2 = "{\"streamsafe_oplog\":2}\n";
const std::string header_v3 = "{\"streamsafe_oplog\":3}\n";

std::vector<oplog_op> read_all(const std::string& text, std::vector<std::vector<byte_range>>* ranges = nullptr) {
  std::istringstream in(text);
  oplog_reader reader(in);
  std::vector<oplog_op> ops;
  while (auto op = reader.next()) {
    if (ranges != nullptr) {
      ranges->emplace_back(op->reads.begin(), op->reads.end());
      ranges->emplace_back(op->writes.begin(), op->writes.end());
    }
    op->reads = {};
    op->writes = {};  // views die with the next line
    op->name = {};
    op->loc = {};
    ops.push_back(*op);
  }
  return ops;
}

// The line a parse_error names for `text`, or 0 when none was thrown.
std::size_t error_line(const std::string& text) {
  try {
    (void)read_all(text);
  } catch (const parse_error& e) {
    return e.line();
  }
  return 0;
}

TEST(OplogReader, ReadsEveryKindWithItsLine) {
  const std::string text = header +
                           "{\"op\":\"alloc\",\"ptr\":4096,\"size\":64,\"stream\":3,\"loc\":\"a.cpp:1\"}\n"
                           "\n"
                           "{\"op\":\"kernel\",\"stream\":3,\"name\":\"k\",\"reads\":[[1,2],[3,4]],\"writes\":[[5,6]]}\n"
                           "{\"op\":\"host_write\",\"ranges\":[[7,8]]}\n"
                           "{\"op\":\"copy\",\"stream\":2,\"src\":[9,10],\"dst\":[11,12]}\n";
  std::vector<std::vector<byte_range>> ranges;
  const auto ops = read_all(text, &ranges);
  ASSERT_EQ(ops.size(), 4U);
  EXPECT_EQ(ops[0].kind, op_kind::alloc);
  EXPECT_EQ(ops[0].line, 2U);
  EXPECT_EQ(ops[0].ptr, 4096U);
  EXPECT_EQ(ops[0].size, 64U);
  EXPECT_EQ(ops[0].stream, 3U);
  EXPECT_EQ(ops[1].line, 4U);  // the blank line 3 is skipped but counted
  EXPECT_EQ(ranges[2], (std::vector<byte_range>{{1, 2}, {3, 4}}));
  EXPECT_EQ(ranges[3], (std::vector<byte_range>{{5, 6}}));
  EXPECT_TRUE(ranges[4].empty());
  EXPECT_EQ(ranges[5], (std::vector<byte_range>{{7, 8}}));  // host_write ranges are writes
  EXPECT_EQ(ranges[6], (std::vector<byte_range>{{9, 10}}));
  EXPECT_EQ(ranges[7], (std::vector<byte_range>{{11, 12}}));
}

TEST(OplogReader, IgnoresUnknownFields) {
  const auto ops = read_all(header + "{\"op\":\"device_sync\",\"future\":{\"x\":[1,2]},\"tid\":7}\n");
  ASSERT_EQ(ops.size(), 1U);
  EXPECT_EQ(ops[0].kind, op_kind::device_sync);
}

TEST(OplogReader, BadVersionLineIsLineOne) {
  EXPECT_EQ(error_line("{\"streamsafe_oplog\":4}\n"), 1U);
  EXPECT_EQ(error_line("{\"streamsafe_oplog\":0}\n"), 1U);
  EXPECT_EQ(error_line("{\"op\":\"device_sync\"}\n"), 1U);
  EXPECT_EQ(error_line("not json\n"), 1U);
  EXPECT_THROW((void)read_all(""), parse_error);
}

TEST(OplogReader, ReadsVersionOneAndVersionTwo) {
  std::istringstream v1(header + "{\"op\":\"device_sync\"}\n");
  oplog_reader old_reader(v1);
  EXPECT_EQ(old_reader.version(), 1U);
  EXPECT_EQ(old_reader.next()->kind, op_kind::device_sync);
  const auto ops = read_all(header_v2 + "{\"op\":\"stream_destroy\",\"stream\":4}\n{\"op\":\"event_destroy\",\"event\":6}\n");
  ASSERT_EQ(ops.size(), 2U);
  EXPECT_EQ(ops[0].kind, op_kind::stream_destroy);
  EXPECT_EQ(ops[0].stream, 4U);
  EXPECT_EQ(ops[1].kind, op_kind::event_destroy);
  EXPECT_EQ(ops[1].event, 6U);
}

TEST(OplogReader, VersionTwoOpsInAVersionOneFileNameTheLine) {
  EXPECT_EQ(error_line(header + "{\"op\":\"device_sync\"}\n{\"op\":\"stream_destroy\",\"stream\":4}\n"), 3U);
  EXPECT_EQ(error_line(header + "{\"op\":\"event_destroy\",\"event\":6}\n"), 2U);
  EXPECT_EQ(error_line(header_v2 + "{\"op\":\"stream_destroy\"}\n"), 2U);  // needs "stream"
}

TEST(OplogReader, ReadsVersionThreesUnmapAndMap) {
  const auto ops = read_all(header_v3 + "{\"op\":\"unmap\",\"ptr\":4096,\"size\":512}\n{\"op\":\"map\",\"ptr\":8192,\"size\":512}\n");
  ASSERT_EQ(ops.size(), 2U);
  EXPECT_EQ(ops[0].kind, op_kind::unmap);
  EXPECT_EQ(ops[0].ptr, 4096U);
  EXPECT_EQ(ops[0].size, 512U);
  EXPECT_EQ(ops[1].kind, op_kind::map);
  EXPECT_EQ(ops[1].ptr, 8192U);
}

TEST(OplogReader, VersionThreeOpsInAnOlderFileNameTheLine) {
  EXPECT_EQ(error_line(header_v2 + "{\"op\":\"unmap\",\"ptr\":4096,\"size\":512}\n"), 2U);
  EXPECT_EQ(error_line(header + "{\"op\":\"device_sync\"}\n{\"op\":\"map\",\"ptr\":1,\"size\":1}\n"), 3U);
  EXPECT_EQ(error_line(header_v3 + "{\"op\":\"map\",\"ptr\":1}\n"), 2U);  // needs "size"
}

TEST(OplogReader, MalformedJsonNamesTheLine) {
  EXPECT_EQ(error_line(header + "{\"op\":\"device_sync\"}\n{\"op\":\"device_sync\"\n"), 3U);
  EXPECT_EQ(error_line(header + "{\"op\":\"device_sync\"} trailing\n"), 2U);
  EXPECT_EQ(error_line(header + "[1,2]\n"), 2U);
}

TEST(OplogReader, MissingFieldsNameTheLine) {
  EXPECT_EQ(error_line(header + "{\"op\":\"alloc\",\"ptr\":1,\"stream\":1}\n"), 2U);
  EXPECT_EQ(error_line(header + "{\"op\":\"device_sync\"}\n{\"op\":\"copy\",\"stream\":1,\"src\":[0,1]}\n"), 3U);
  EXPECT_EQ(error_line(header + "{\"stream\":1}\n"), 2U);
}

TEST(OplogReader, WrongTypesNameTheLine) {
  EXPECT_EQ(error_line(header + "{\"op\":\"free\",\"ptr\":\"0x10\"}\n"), 2U);
  EXPECT_EQ(error_line(header + "{\"op\":\"free\",\"ptr\":-1}\n"), 2U);
  EXPECT_EQ(error_line(header + "{\"op\":\"free\",\"ptr\":1.5}\n"), 2U);
  EXPECT_EQ(error_line(header + "{\"op\":\"host_read\",\"ranges\":[[1]]}\n"), 2U);
  EXPECT_EQ(error_line(header + "{\"op\":\"host_read\",\"ranges\":[1,2]}\n"), 2U);
  EXPECT_EQ(error_line(header + "{\"op\":\"kernel\",\"stream\":1,\"name\":7}\n"), 2U);
  EXPECT_EQ(error_line(header + "{\"op\":\"teleport\"}\n"), 2U);
}

TEST(OplogReader, ErrorTextSaysWhatIsWrong) {
  try {
    (void)read_all(header + "{\"op\":\"alloc\",\"ptr\":1,\"stream\":1}\n");
    FAIL() << "no parse_error";
  } catch (const parse_error& e) {
    EXPECT_STREQ(e.what(), "line 2: op \"alloc\" needs field \"size\"");
  }
}

TEST(OplogWriter, WhatItWritesReadsBackToTheSameOps) {
  const std::vector<byte_range> reads{{1, 2}, {3, 4}};
  const std::vector<byte_range> writes{{5, 6}};
  std::ostringstream out;
  oplog_writer writer(out);
  oplog_op kernel;
  kernel.kind = op_kind::kernel;
  kernel.stream = 9;
  kernel.name = "k\"quoted\"";
  kernel.loc = "a.cpp:3";
  kernel.reads = reads;
  kernel.writes = writes;
  writer.write(kernel);
  oplog_op wait;
  wait.kind = op_kind::stream_wait_event;
  wait.stream = 2;
  wait.event = 5;
  writer.write(wait);
  oplog_op destroy;
  destroy.kind = op_kind::stream_destroy;
  destroy.stream = 2;
  writer.write(destroy);
  oplog_op unmapped;
  unmapped.kind = op_kind::unmap;
  unmapped.ptr = 4096;
  unmapped.size = 512;
  writer.write(unmapped);

  std::istringstream in(out.str());
  oplog_reader reader(in);
  auto first = reader.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->kind, op_kind::kernel);
  EXPECT_EQ(first->stream, 9U);
  EXPECT_EQ(first->name, "k\"quoted\"");
  EXPECT_EQ(first->loc, "a.cpp:3");
  EXPECT_EQ(std::vector<byte_range>(first->reads.begin(), first->reads.end()), reads);
  EXPECT_EQ(std::vector<byte_range>(first->writes.begin(), first->writes.end()), writes);
  auto second = reader.next();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->kind, op_kind::stream_wait_event);
  EXPECT_EQ(second->event, 5U);
  EXPECT_EQ(second->line, 3U);
  auto third = reader.next();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->kind, op_kind::stream_destroy);
  EXPECT_EQ(third->stream, 2U);
  auto fourth = reader.next();
  ASSERT_TRUE(fourth);
  EXPECT_EQ(fourth->kind, op_kind::unmap);
  EXPECT_EQ(fourth->ptr, 4096U);
  EXPECT_EQ(fourth->size, 512U);
  EXPECT_EQ(reader.version(), oplog_version);
  EXPECT_FALSE(reader.next());
}

}  // namespace
}  // namespace streamsafe::hazard
