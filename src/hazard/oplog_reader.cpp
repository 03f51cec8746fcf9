// The streaming op log reader: one line at a time into a padded buffer, parsed with simdjson's
// DOM parser (which validates the whole line), so memory is bounded by the longest line.
#include "streamsafe/hazard/oplog_reader.hpp"

#include <simdjson.h>

#include <cstring>
#include <string>
#include <vector>

#include "hazard/oplog_fields.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe::hazard {

using detail::field;

namespace {

bool is_blank(std::string_view text) {
  return text.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

struct oplog_reader::impl {
  std::istream* in;
  simdjson::dom::parser parser;
  std::string line;
  std::vector<char> padded;  // the line plus SIMDJSON_PADDING bytes, as simdjson requires
  std::uint64_t line_number = 0;
  std::uint64_t version = 0;  // of the file, from its first line
  std::uint64_t bytes = 0;
  std::vector<byte_range> reads;
  std::vector<byte_range> writes;

  [[noreturn]] void fail(const std::string& message) const {
    throw parse_error("line " + std::to_string(line_number) + ": " + message, line_number);
  }

  // Reads the next non-blank line; false at the end of the input.
  bool read_line() {
    while (std::getline(*in, line)) {
      ++line_number;
      bytes += line.size() + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!is_blank(line)) return true;
    }
    return false;
  }

  simdjson::dom::object parse_object() {
    padded.resize(line.size() + simdjson::SIMDJSON_PADDING);
    std::memcpy(padded.data(), line.data(), line.size());
    simdjson::dom::element root;
    if (auto error = parser.parse(padded.data(), line.size(), false).get(root)) {
      fail(std::string("malformed JSON (") + simdjson::error_message(error) + ")");
    }
    simdjson::dom::object object;
    if (root.get_object().get(object)) fail("a line must be a JSON object");
    return object;
  }

  std::uint64_t integer(simdjson::dom::element value, field f) const {
    std::uint64_t number = 0;
    if (value.get_uint64().get(number)) fail(detail_of(f, "a non-negative integer"));
    return number;
  }

  std::string_view text(simdjson::dom::element value, field f) const {
    std::string_view string;
    if (value.get_string().get(string)) fail(detail_of(f, "a string"));
    return string;
  }

  byte_range range(simdjson::dom::element value, field f) const {
    simdjson::dom::array pair;
    std::uint64_t first = 0;
    std::uint64_t size = 0;
    if (value.get_array().get(pair) || pair.size() != 2 || pair.at(0).get_uint64().get(first) ||
        pair.at(1).get_uint64().get(size)) {
      fail(detail_of(f, "a range [first byte, byte count] of non-negative integers"));
    }
    if (first + size < first) fail(detail_of(f, "a range that does not wrap past 2^64"));
    return byte_range{first, size};
  }

  void ranges(simdjson::dom::element value, field f, std::vector<byte_range>& out) const {
    simdjson::dom::array list;
    if (value.get_array().get(list)) fail(detail_of(f, "an array of ranges [[first byte, byte count], ...]"));
    for (simdjson::dom::element item : list) out.push_back(range(item, f));
  }

  static std::string detail_of(field f, std::string_view expected) {
    return "field \"" + std::string(detail::field_key(f)) + "\" must be " + std::string(expected);
  }

  // Stores one known field into `op`.
  void store(field f, simdjson::dom::element value, oplog_op& op, std::string_view& op_name) {
    switch (f) {  // no default: the compiler warns when a field is missing
      case field::op: op_name = text(value, f); return;
      case field::stream: op.stream = integer(value, f); return;
      case field::event: op.event = integer(value, f); return;
      case field::ptr: op.ptr = integer(value, f); return;
      case field::size: op.size = integer(value, f); return;
      case field::name: op.name = text(value, f); return;
      case field::loc: op.loc = text(value, f); return;
      case field::reads: ranges(value, f, reads); return;
      case field::writes: ranges(value, f, writes); return;
      case field::src: reads.push_back(range(value, f)); return;
      case field::dst: writes.push_back(range(value, f)); return;
      case field::ranges: ranges(value, f, reads); return;  // moved to writes for host_write below
    }
  }

  oplog_op parse_op() {
    reads.clear();
    writes.clear();
    oplog_op op;
    op.line = line_number;
    std::string_view op_name;
    detail::field_set present;
    for (auto [key, value] : parse_object()) {
      const auto f = detail::field_of_key(key);
      if (!f) continue;  // unknown fields are ignored (forward compatibility)
      if (present.has(*f)) fail("field \"" + std::string(key) + "\" appears twice");
      present.add(*f);
      store(*f, value, op, op_name);
    }
    if (!present.has(field::op)) fail("missing field \"op\"");
    const auto kind = detail::op_kind_of(op_name);
    if (!kind) fail("unknown op \"" + std::string(op_name) + "\"");
    if (first_version_of(*kind) > version) {
      fail("op \"" + std::string(op_name) + "\" needs op log version " + std::to_string(first_version_of(*kind)) +
           " (this file is version " + std::to_string(version) + ")");
    }
    op.kind = *kind;
    check_required(*kind, present);
    if (*kind == op_kind::host_write) std::swap(reads, writes);
    op.reads = reads;
    op.writes = writes;
    return op;
  }

  void check_required(op_kind kind, detail::field_set present) const {
    const detail::field_set required = detail::required_fields(kind);
    for (const field f : detail::all_fields) {
      if (required.has(f) && !present.has(f)) {
        fail("op \"" + std::string(op_kind_name(kind)) + "\" needs field \"" + std::string(detail::field_key(f)) + "\"");
      }
    }
  }

  void read_version_line() {
    if (!read_line()) throw parse_error("empty input: not a streamsafe op log (want {\"streamsafe_oplog\":3} first)", 0);
    if (line_number != 1) {
      throw parse_error("line 1: not a streamsafe op log: the first line must be {\"streamsafe_oplog\":3}", 1);
    }
    simdjson::dom::element value;
    std::uint64_t number = 0;
    if (parse_object()["streamsafe_oplog"].get(value) || value.get_uint64().get(number)) {
      fail("not a streamsafe op log: the first line must be {\"streamsafe_oplog\":3}");
    }
    if (number < oplog_oldest_version || number > oplog_version) {
      fail("op log version " + std::to_string(number) + " is not supported (this build reads versions " +
           std::to_string(oplog_oldest_version) + " to " + std::to_string(oplog_version) + ")");
    }
    version = number;
  }
};

oplog_reader::oplog_reader(std::istream& in) : impl_(std::make_unique<impl>()) {
  impl_->in = &in;
  impl_->read_version_line();
}

oplog_reader::~oplog_reader() = default;

std::optional<oplog_op> oplog_reader::next() {
  if (!impl_->read_line()) return std::nullopt;
  return impl_->parse_op();
}

std::uint64_t oplog_reader::bytes_read() const noexcept { return impl_->bytes; }

std::uint64_t oplog_reader::version() const noexcept { return impl_->version; }

}  // namespace streamsafe::hazard
