// Finds where JSON text first goes wrong. simdjson says *that* a document is malformed but not
// always *where*; the reader calls this only on that slow path, to give the user a byte offset.
#pragma once

#include <cstddef>
#include <string_view>

namespace streamsafe::monitor::detail {

struct syntax_error {
  std::size_t offset = 0;
  const char* reason = "";
};

/// The first syntax error of `text` as strict JSON (RFC 8259, UTF-8 checked), or offset ==
/// text.size() + 1 with an empty reason when the text is valid.
[[nodiscard]] syntax_error locate_syntax_error(std::string_view text);

}  // namespace streamsafe::monitor::detail
