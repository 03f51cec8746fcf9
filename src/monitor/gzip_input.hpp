// Loads a file that may be gzip'd, so readers need not care. Internal to the monitor.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace streamsafe::monitor::detail {

/// True when `bytes` start with the gzip magic number.
[[nodiscard]] bool looks_gzipped(std::string_view bytes);

/// Decompresses every gzip member in `compressed`; throws parse_error with the compressed offset
/// on corrupt input.
[[nodiscard]] std::string gunzip(std::string_view compressed, const std::string& source);

/// The file's bytes, decompressed when they are gzip'd, with at least `spare_capacity` bytes of
/// capacity beyond them (a parser's padding, so it need not copy); throws streamsafe::error when
/// unreadable.
[[nodiscard]] std::string load_maybe_gzipped(const std::filesystem::path& file, std::size_t spare_capacity = 0);

}  // namespace streamsafe::monitor::detail
