// Format and output of hazard reports. No additional logic: the engine decided everything; this
// file only chooses the words.
#include "streamsafe/hazard/report_text.hpp"

#include "hazard/hex.hpp"
#include "hazard/json_text.hpp"

namespace streamsafe::hazard {

namespace {

using detail::hex;

std::string where(const op_ref& op) { return op.loc.empty() ? "line " + std::to_string(op.line) : op.loc; }

std::string_view role_name(op_role role) {
  switch (role) {  // no default: the compiler warns when a role is missing
    case op_role::read: return "read";
    case op_role::write: return "write";
    case op_role::free: return "free";
    case op_role::wait: return "wait";
  }
  return "?";
}

// "reads", "writes", "frees", "waits".
std::string verb(op_role role) { return std::string(role_name(role)) + "s"; }

std::string quoted(std::string_view name) { return "`" + std::string(name) + "`"; }

std::string host_race_fix(const hazard& finding) {
  if (finding.second.stream == "host") {
    return "make the host wait for " + quoted(finding.first.stream) + " (event_sync on an event recorded after " +
           quoted(finding.first.op) + " (" + where(finding.first) + "), or stream_sync) before " +
           quoted(finding.second.op) + " (" + where(finding.second) + ")";
  }
  return "enqueue " + quoted(finding.second.op) + " on " + quoted(finding.second.stream) + " after the host's " +
         quoted(finding.first.op) + " (" + where(finding.first) + ")";
}

// The release point orders only the allocation stream: either the missing record_stream, or the
// missing order after the allocation for a block used on another stream (or by the host).
std::string reuse_race_fix(const hazard& finding) {
  if (finding.alloc_op.op.empty()) {
    return "call record_stream(" + hex(finding.block) + ", " + quoted(finding.first.stream) + ") before the free at " +
           where(finding.free_op);
  }
  const bool host = finding.second.stream == "host";
  const std::string order = host ? "make the host synchronize with " : "make " + quoted(finding.second.stream) + " wait on ";
  std::string fix = order + "an event recorded on " + quoted(finding.alloc_op.stream) + " after the allocation at " +
                    where(finding.alloc_op) + ", before " + quoted(finding.second.op) + " (" + where(finding.second) + ")";
  if (!host) fix += ", or allocate the block on " + quoted(finding.second.stream);
  return fix + ": the free at " + where(finding.free_op) + " orders only the allocation stream";
}

std::string bytes_text(const byte_range& range) {
  return "bytes [" + hex(range.first) + ", " + hex(range.end()) + ") (" + std::to_string(range.size) + " bytes)";
}

std::string op_line(std::string_view label, const op_ref& op) {
  return "  " + std::string(label) + quoted(op.op) + " on " + (op.stream == "host" ? "the host" : quoted(op.stream)) +
         " " + verb(op.role) + ", at " + where(op) + (op.loc.empty() ? "" : " (line " + std::to_string(op.line) + ")") +
         "\n";
}

std::string headline(const hazard& finding) {
  const std::string kind(kind_name(finding.kind));
  switch (finding.kind) {  // no default: the compiler warns when a kind is missing
    case hazard_kind::race:
    case hazard_kind::host_race:
      return kind + " on " + bytes_text(finding.range) + ": neither access is ordered before the other\n";
    case hazard_kind::reuse_race:
      return kind + " on " + bytes_text(finding.range) + ": the block at " + hex(finding.block) +
             " was reused while an old-lifetime access may still run\n";
    case hazard_kind::use_after_free:
      return kind + " on " + bytes_text(finding.range) + ": the block at " + hex(finding.block) + " was freed\n";
    case hazard_kind::wait_unrecorded:
      return kind + " (informational): event " + std::to_string(finding.event) + " was never recorded; the wait does nothing\n";
    case hazard_kind::redundant_wait:
      return kind + " (informational): the wait on event " + std::to_string(finding.event) + " is already implied\n";
  }
  return kind + "\n";
}

}  // namespace

std::string fix_text(const hazard& finding) {
  switch (finding.kind) {  // no default: the compiler warns when a kind is missing
    case hazard_kind::race:
      return "make stream " + quoted(finding.second.stream) + " wait on an event recorded on " +
             quoted(finding.first.stream) + " after " + quoted(finding.first.op) + " (" + where(finding.first) + ")";
    case hazard_kind::host_race: return host_race_fix(finding);
    case hazard_kind::reuse_race: return reuse_race_fix(finding);
    case hazard_kind::use_after_free:
      return "do not use the block after the free at " + where(finding.first) + ": move " + quoted(finding.second.op) +
             " before it, or free later";
    case hazard_kind::wait_unrecorded:
      return "record event " + std::to_string(finding.event) + " after the work to wait for, before " + where(finding.second);
    case hazard_kind::redundant_wait:
      return "remove the wait at " + where(finding.second) + ": " + quoted(finding.second.stream) +
             " is already ordered after that work";
  }
  return {};
}

std::string describe(const hazard& finding) {
  std::string text = headline(finding);
  if (is_informational(finding.kind)) {
    text += op_line("at:     ", finding.second);
  } else {
    text += op_line("second: ", finding.second);
    text += op_line("first:  ", finding.first);
  }
  text += "  fix:    " + fix_text(finding) + "\n";
  if (finding.count > 1) text += "  seen:   " + std::to_string(finding.count) + " times between these call sites\n";
  return text;
}

namespace {
void append_op_json(std::string& out, const op_ref& op) {
  out += "{\"line\":" + std::to_string(op.line) + ",\"op\":";
  detail::append_json_string(out, op.op);
  out += ",\"stream\":";
  detail::append_json_string(out, op.stream);
  out += ",\"loc\":";
  detail::append_json_string(out, op.loc);
  out += ",\"access\":";
  detail::append_json_string(out, role_name(op.role));
  out += '}';
}
}  // namespace

std::string to_json(const hazard& finding) {
  std::string out = "{\"kind\":";
  detail::append_json_string(out, kind_name(finding.kind));
  out += ",\"first\":";
  append_op_json(out, finding.first);
  out += ",\"second\":";
  append_op_json(out, finding.second);
  out += ",\"range\":[" + std::to_string(finding.range.first) + ',' + std::to_string(finding.range.size) + "],\"fix\":";
  detail::append_json_string(out, fix_text(finding));
  if (finding.count > 1) out += ",\"count\":" + std::to_string(finding.count);
  out += '}';
  return out;
}

}  // namespace streamsafe::hazard
