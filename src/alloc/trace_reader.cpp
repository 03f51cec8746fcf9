// Reads allocation traces: CSV `action,addr,size,stream`, plain or gzip'd (GUIDE.md section 5).
#include <zlib.h>

#include <array>
#include <charconv>
#include <memory>

#include "streamsafe/alloc/trace_replay.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe {

namespace {

constexpr std::array<std::pair<std::string_view, trace_action>, 10> action_names{{
    {"alloc", trace_action::alloc},
    {"free_requested", trace_action::free_requested},
    {"free_completed", trace_action::free_completed},
    {"segment_alloc", trace_action::segment_alloc},
    {"segment_free", trace_action::segment_free},
    {"segment_map", trace_action::segment_map},
    {"segment_unmap", trace_action::segment_unmap},
    {"oom", trace_action::oom},
    {"snapshot", trace_action::snapshot},
    {"record_stream", trace_action::record_stream},
}};

[[noreturn]] void reject(std::size_t line, const std::string& why, std::string_view text) {
  constexpr std::size_t shown = 80;
  throw parse_error("allocation trace, line " + std::to_string(line) + ": " + why + ": '" +
                        std::string(text.substr(0, shown)) + (text.size() > shown ? "...'" : "'"),
                    line);
}

trace_action parse_action(std::string_view field, std::size_t line, std::string_view text) {
  for (const auto& [name, action] : action_names) {
    if (name == field) return action;
  }
  reject(line, "unknown action '" + std::string(field.substr(0, 40)) + "'", text);
}

template <typename Number>
Number parse_number(std::string_view field, const char* what, std::size_t line, std::string_view text) {
  int base = 10;
  if constexpr (std::is_unsigned_v<Number>) {
    if (field.starts_with("0x") || field.starts_with("0X")) {
      field.remove_prefix(2);
      base = 16;
    }
  }
  Number value{};
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value, base);
  if (field.empty() || error != std::errc{} || end != field.data() + field.size()) {
    reject(line, std::string(what) + " is not a number", text);
  }
  return value;
}

trace_event parse_line(std::string_view text, std::size_t line) {
  std::array<std::string_view, 4> fields;
  std::string_view rest = text;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const std::size_t comma = rest.find(',');
    if ((comma == std::string_view::npos) != (i + 1 == fields.size())) {
      reject(line, "expected 4 fields (action,addr,size,stream)", text);
    }
    fields[i] = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return trace_event{parse_action(fields[0], line, text), parse_number<std::uint64_t>(fields[1], "addr", line, text),
                     parse_number<std::uint64_t>(fields[2], "size", line, text),
                     parse_number<std::int64_t>(fields[3], "stream", line, text), line};
}

}  // namespace

std::string_view to_string(trace_action action) noexcept {
  switch (action) {
    case trace_action::alloc: return "alloc";
    case trace_action::free_requested: return "free_requested";
    case trace_action::free_completed: return "free_completed";
    case trace_action::segment_alloc: return "segment_alloc";
    case trace_action::segment_free: return "segment_free";
    case trace_action::segment_map: return "segment_map";
    case trace_action::segment_unmap: return "segment_unmap";
    case trace_action::oom: return "oom";
    case trace_action::snapshot: return "snapshot";
    case trace_action::record_stream: return "record_stream";
  }
  return "?";
}

std::vector<trace_event> parse_alloc_trace(std::string_view text) {
  std::vector<trace_event> events;
  std::size_t line = 0;
  bool header_seen = false;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    std::string_view row = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    ++line;
    if (row.ends_with('\r')) row.remove_suffix(1);
    if (!header_seen) {
      if (row != "action,addr,size,stream") reject(line, "expected the header 'action,addr,size,stream'", row);
      header_seen = true;
      continue;
    }
    if (row.empty()) continue;
    events.push_back(parse_line(row, line));
  }
  if (!header_seen) throw parse_error("allocation trace: empty input (expected the header 'action,addr,size,stream')", 0);
  return events;
}

std::vector<trace_event> load_alloc_trace(const std::filesystem::path& file) {
  // gzread reads plain files as they are, so one path serves both forms.
  std::unique_ptr<gzFile_s, int (*)(gzFile)> input(gzopen(file.c_str(), "rb"), gzclose);
  if (!input) throw error("cannot open allocation trace '" + file.string() + "'");
  std::string text;
  std::array<char, 1 << 16> buffer{};
  for (;;) {
    const int got = gzread(input.get(), buffer.data(), static_cast<unsigned>(buffer.size()));
    if (got < 0) {
      int code = 0;
      throw parse_error("allocation trace '" + file.string() + "': corrupt gzip data (" + gzerror(input.get(), &code) +
                            ")",
                        0, static_cast<std::size_t>(gzoffset(input.get())));
    }
    if (got == 0) break;
    text.append(buffer.data(), static_cast<std::size_t>(got));
  }
  return parse_alloc_trace(text);
}

}  // namespace streamsafe
