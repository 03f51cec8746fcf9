// Reads a Chrome trace event file into the monitor's trace model (trace.hpp).
//
// Accepted: the JSON that PyTorch's profiler (Kineto) writes and the JSON our own exporter writes
// (chrome_trace.hpp), plain or gzip'd (detected by the gzip magic, not by the file name); an object
// with a "traceEvents" array, or a bare array of events. Used from it: X slices of categories
// kernel, gpu_memcpy, gpu_memset, cuda_sync, cuda_event (GPU side), cuda_runtime and cuda_driver
// (host side), user_annotation and gpu_user_annotation (ranges, iteration markers), M metadata
// naming threads (stream names) and "deviceProperties". Other events are skipped.
//
// Errors: a malformed file throws streamsafe::parse_error whose what() names the source and the
// byte offset (into the decompressed JSON) and whose offset() holds it; an unreadable file throws
// streamsafe::error. Safe to call from many threads. Each thread keeps its JSON parser's index
// buffers (about the size of the largest trace it read) for the next call: a second trace of
// similar size is parsed without allocating them again.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "streamsafe/monitor/trace.hpp"

namespace streamsafe::monitor {

/// Reads and parses one trace file (one rank).
[[nodiscard]] trace read_trace(const std::filesystem::path& file);

/// Parses trace JSON already in memory; `source` names it in error messages.
[[nodiscard]] trace parse_trace(std::string_view json, std::string source = "<memory>");

}  // namespace streamsafe::monitor
