// Writing JSON strings: quoting and escaping, shared by the op log writer and the report's JSON.
#pragma once

#include <string>
#include <string_view>

namespace streamsafe::hazard::detail {

/// Appends `text` to `out` as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view text);

}  // namespace streamsafe::hazard::detail
