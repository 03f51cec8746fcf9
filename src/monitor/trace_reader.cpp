// Chrome trace JSON -> trace model, with simdjson's on-demand parser: one pass, no DOM, fields
// picked by name so the order of keys inside an event does not matter.
#include "streamsafe/monitor/trace_reader.hpp"

#include <simdjson.h>

#include <charconv>
#include <optional>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "monitor/exact_time.hpp"
#include "monitor/gzip_input.hpp"
#include "monitor/json_error_locator.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe::monitor {

namespace {

namespace od = simdjson::ondemand;

/// The fields of one event the model may need; string views point into the parser's buffer.
struct event_fields {
  char ph = 0;
  std::string_view cat;
  std::string_view name;
  std::optional<std::int64_t> pid;  // empty when the writer used a string ("Spans")
  std::optional<std::int64_t> tid;
  std::optional<std::int64_t> ts_ns;  // exact: see exact_time.hpp
  std::optional<std::int64_t> dur_ns;
  bool unreadable_time = false;  // a "ts" or "dur" that is not a number of microseconds
  // args
  std::int64_t correlation = -1;
  std::optional<std::int64_t> device;
  std::optional<std::int64_t> stream;
  std::uint64_t bytes = 0;
  std::int64_t wait_on_stream = -1;
  std::int64_t wait_on_record_correlation = -1;
  std::string_view metadata_name;  // args.name of M events
};

enum class event_family : std::uint8_t { gpu_op, runtime_call, host_annotation, gpu_annotation, ignored };

event_family family_of(const event_fields& e, op_kind& kind) {
  const std::string_view cat = e.cat;
  if (cat == "kernel") return kind = op_kind::kernel, event_family::gpu_op;
  if (cat == "gpu_memcpy") return kind = op_kind::memcpy, event_family::gpu_op;
  if (cat == "gpu_memset") return kind = op_kind::memset, event_family::gpu_op;
  if (cat == "cuda_sync") return kind = op_kind::sync, event_family::gpu_op;
  if (cat == "cuda_event") return kind = op_kind::event_record, event_family::gpu_op;
  if (cat == "cuda_runtime" || cat == "cuda_driver") return event_family::runtime_call;
  if (cat == "user_annotation") return event_family::host_annotation;
  if (cat == "gpu_user_annotation") return event_family::gpu_annotation;
  // Older PyTorch versions put ProfilerStep#N under cpu_op.
  if (cat == "cpu_op" && e.name.starts_with("ProfilerStep#")) return event_family::host_annotation;
  return event_family::ignored;
}

memory_kind memory_kind_named(std::string_view word) {
  if (word == "Pageable") return memory_kind::pageable;
  if (word == "Pinned") return memory_kind::pinned;
  if (word == "Device") return memory_kind::device;
  if (word == "Managed") return memory_kind::managed;
  if (word == "Array") return memory_kind::array;
  return memory_kind::unknown;
}

/// "Memcpy HtoD (Pageable -> Device)" -> {pageable, device}.
std::pair<memory_kind, memory_kind> copy_sides(std::string_view name) {
  const auto open = name.find('(');
  const auto arrow = name.find(" -> ");
  const auto close = name.rfind(')');
  if (open == std::string_view::npos || arrow == std::string_view::npos || close == std::string_view::npos ||
      !(open < arrow && arrow < close)) {
    return {memory_kind::unknown, memory_kind::unknown};
  }
  return {memory_kind_named(name.substr(open + 1, arrow - open - 1)),
          memory_kind_named(name.substr(arrow + 4, close - arrow - 4))};
}


/// An integer id that some writers give as a string ("stream 7", "7").
std::optional<std::int64_t> read_id(od::value v) {
  if (v.type() == od::json_type::number) return detail::double_to_int64(v.get_double());
  if (v.type() != od::json_type::string) return std::nullopt;
  std::string_view text = v.get_string();
  if (auto space = text.rfind(' '); space != std::string_view::npos) text = text.substr(space + 1);
  // Digits only, and an id too large for 64 bits is no id rather than a wrapped one.
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;
  std::int64_t id = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return id;
}

class reader {
 public:
  explicit reader(std::string source) { result_.source = std::move(source); }

  /// `capacity`: the bytes readable from json.data(); with simdjson's padding to spare the JSON
  /// is parsed where it lies, otherwise from a padded copy.
  trace parse(std::string_view json, std::size_t capacity) {
    if (capacity >= json.size() + simdjson::SIMDJSON_PADDING) {
      return parse(simdjson::padded_string_view(json.data(), json.size(), capacity), json);
    }
    const simdjson::padded_string copy(json);
    return parse(simdjson::padded_string_view(copy), json);
  }

 private:
  trace parse(simdjson::padded_string_view padded, std::string_view json) {
    base_ = padded.data();
    // Room for the ops and calls of a typical trace (an event takes 150 bytes of JSON or more):
    // growing by copies was a large share of reading big traces, and capacity never touched
    // costs address space, not memory.
    result_.ops.reserve(json.size() / 150);
    result_.calls.reserve(json.size() / 150);
    try {
      // Reused: a parser keeps its index buffers (as large as the input), so a second trace of
      // similar size costs no allocation and no page faults for them (simdjson's advice; on the
      // H200's host 560 and 760 ms against 695 and 815 ms with a parser per trace, run 13).
      thread_local od::parser parser;
      od::document doc = parser.iterate(padded);
      read_root(doc);
    } catch (const simdjson::simdjson_error& e) {
      throw_syntax(json, e.error());
    }
    finish();
    return std::move(result_);
  }

  void read_root(od::document& doc) {
    if (doc.type() == od::json_type::array) {
      read_events(doc.get_array());
      return;
    }
    if (doc.type() != od::json_type::object) fail(doc.current_location(), "a trace is a JSON object or array");
    bool saw_events = false;
    for (auto field : doc.get_object()) {
      const auto key = field.key().value();
      if (key == "traceEvents") {
        od::value v = field.value();
        if (v.type() != od::json_type::array) fail(v.current_location(), "\"traceEvents\" is not an array");
        read_events(v.get_array());
        saw_events = true;
      } else if (key == "deviceProperties") {
        read_device_properties(field.value());
      }
    }
    if (!saw_events) fail(base_, "no \"traceEvents\" array");
  }

  void read_device_properties(od::value v) {
    if (v.type() != od::json_type::array) return;
    for (od::value device : v.get_array()) {
      if (device.type() != od::json_type::object) continue;
      std::optional<std::int64_t> id;
      std::string name;
      for (auto field : device.get_object()) {
        const auto key = field.key().value();
        if (key == "id") id = read_id(field.value());
        if (key == "name" && field.value().type() == od::json_type::string) name = std::string(field.value().get_string().value());
      }
      if (id) result_.device_names[static_cast<std::int32_t>(*id)] = name;
    }
  }

  void read_events(od::array events) {
    for (od::value v : events) {
      const char* where = v.current_location();
      current_event_ = where;
      if (v.type() != od::json_type::object) fail(where, "a trace event is not an object");
      event_fields e;
      read_event(v.get_object(), e);
      add(e, where);
    }
  }

  static void read_event(od::object object, event_fields& e) {
    for (auto field : object) {
      const auto key = field.key().value();
      od::value v = field.value();
      if (key == "ph") {
        std::string_view ph = v.get_string();
        e.ph = ph.empty() ? '?' : ph[0];
      } else if (key == "cat") {
        e.cat = v.get_string();
      } else if (key == "name") {
        if (v.type() == od::json_type::string) e.name = v.get_string();
      } else if (key == "pid") {
        e.pid = read_id(v);
      } else if (key == "tid") {
        e.tid = read_id(v);
      } else if (key == "ts") {
        read_time(v, e.ts_ns, e.unreadable_time);
      } else if (key == "dur") {
        read_time(v, e.dur_ns, e.unreadable_time);
      } else if (key == "args") {
        if (v.type() == od::json_type::object) read_args(v.get_object(), e);
      }
    }
  }

  /// Not a number, or a malformed one: simdjson's error, as for any other field. A number whose
  /// nanoseconds do not fit in int64 is refused later, where the event's offset is known.
  static void read_time(od::value v, std::optional<std::int64_t>& ns, bool& unreadable) {
    if (v.type() == od::json_type::number) ns = detail::microseconds_text_to_ns(v.raw_json_token());
    if (ns) return;
    [[maybe_unused]] const double checked = v.get_double();
    unreadable = true;
  }

  static void read_args(od::object args, event_fields& e) {
    for (auto field : args) {
      const auto key = field.key().value();
      od::value v = field.value();
      if (v.type() != od::json_type::number) {
        if (key == "name" && v.type() == od::json_type::string) e.metadata_name = v.get_string();
        continue;
      }
      const std::optional<std::int64_t> number = detail::double_to_int64(v.get_double());
      if (key == "correlation") {
        e.correlation = number.value_or(-1);
      } else if (key == "stream") {
        e.stream = number;
      } else if (key == "device") {
        e.device = number;
      } else if (key == "bytes") {
        e.bytes = number.value_or(0) > 0 ? static_cast<std::uint64_t>(*number) : 0;
      } else if (key == "wait_on_stream") {
        e.wait_on_stream = number.value_or(-1);
      } else if (key == "wait_on_cuda_event_record_corr_id") {
        e.wait_on_record_correlation = number.value_or(-1);
      }
    }
  }

  void add(const event_fields& e, const char* where) {
    if (e.ph == 'M') return add_metadata(e);
    if (e.ph != 'X') return;  // flows are implied by correlation ids and wait args
    op_kind kind = op_kind::kernel;
    const event_family family = family_of(e, kind);
    if (family == event_family::ignored) return;
    if (e.unreadable_time) fail(where, "an X event's \"ts\" or \"dur\" is not a number of microseconds within range");
    if (!e.ts_ns) fail(where, "an X event has no \"ts\"");
    if (e.dur_ns.value_or(0) < 0) fail(where, "an X event has a negative \"dur\"");
    if (!result_.origin_ns) result_.origin_ns = *e.ts_ns;
    const double ts = since_origin_us(*e.ts_ns, where);
    const double dur = static_cast<double>(e.dur_ns.value_or(0)) / 1000.0;
    switch (family) {
      case event_family::gpu_op: return add_gpu_op(e, kind, ts, dur, where);
      case event_family::runtime_call:
        result_.calls.push_back({e.tid.value_or(0), classify_call(e.name), ts, dur,
                                 result_.names.intern(e.name), e.correlation});
        return;
      case event_family::host_annotation:
        result_.annotations.push_back(
            {annotation_side::host, {}, e.tid.value_or(0), result_.names.intern(e.name), ts, dur});
        return;
      case event_family::gpu_annotation:
        result_.annotations.push_back({annotation_side::gpu, gpu_stream_of(e), 0, result_.names.intern(e.name), ts, dur});
        return;
      case event_family::ignored: return;
    }
  }

  static stream_key gpu_stream_of(const event_fields& e) {
    return {static_cast<std::int32_t>(e.device.value_or(e.pid.value_or(0))), e.stream.value_or(e.tid.value_or(0))};
  }

  /// Microseconds after the trace's origin; the difference is taken in integers, so it is exact
  /// wherever a double holds it (below 2^53 ns, 104 days).
  double since_origin_us(std::int64_t ts_ns, const char* where) const {
    std::int64_t delta = 0;
    if (__builtin_sub_overflow(ts_ns, *result_.origin_ns, &delta)) fail(where, "an X event's \"ts\" is too far from the trace's first");
    return static_cast<double>(delta) / 1000.0;
  }

  void add_gpu_op(const event_fields& e, op_kind kind, double ts, double dur, const char* where) {
    if (!e.pid && !e.device) fail(where, "a GPU event names no device (pid or args.device)");
    gpu_op op;
    op.stream = gpu_stream_of(e);
    op.kind = kind;
    op.ts_us = ts;
    op.dur_us = dur;
    op.name = result_.names.intern(e.name);
    op.correlation = e.correlation;
    op.bytes = e.bytes;
    if (kind == op_kind::memcpy) std::tie(op.src, op.dst) = copy_sides(e.name);
    const std::size_t index = result_.ops.size();
    result_.ops.push_back(op);
    if (kind == op_kind::event_record && e.correlation >= 0) record_by_correlation_[e.correlation] = index;
    if (kind == op_kind::sync && e.wait_on_record_correlation >= 0) {
      pending_waits_.emplace_back(index, e.wait_on_record_correlation);
    }
  }

  void add_metadata(const event_fields& e) {
    if (e.name == "thread_name" && e.pid && e.tid && !e.metadata_name.empty()) {
      thread_names_[{*e.pid, *e.tid}] = std::string(e.metadata_name);
    }
  }

  void finish() {
    for (auto [wait, correlation] : pending_waits_) {
      if (auto it = record_by_correlation_.find(correlation); it != record_by_correlation_.end()) {
        result_.dependencies.push_back({it->second, wait});
      }
    }
    for (const auto& op : result_.ops) {
      auto it = thread_names_.find({op.stream.device, op.stream.stream});
      if (it != thread_names_.end()) result_.stream_names.try_emplace(op.stream, trim(it->second));
    }
    sort_by_time(result_);
  }

  static std::string trim(std::string text) {
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text;
  }

  [[noreturn]] void fail(const char* where, const std::string& why) const {
    const auto offset = static_cast<std::size_t>(where - base_);
    throw parse_error(result_.source + ": byte " + std::to_string(offset) + ": " + why, 0, offset);
  }

  [[noreturn]] void throw_syntax(std::string_view json, simdjson::error_code code) const {
    const detail::syntax_error located = detail::locate_syntax_error(json);
    if (located.offset <= json.size()) {
      throw parse_error(result_.source + ": byte " + std::to_string(located.offset) + ": malformed JSON: " +
                            located.reason,
                        0, located.offset);
    }
    // Valid JSON that simdjson still refuses (e.g. nesting deeper than it allows, a number out of
    // range, a field of the wrong type): point at the event being read, in simdjson's words.
    const auto offset = current_event_ == nullptr ? 0 : static_cast<std::size_t>(current_event_ - base_);
    throw parse_error(result_.source + ": byte " + std::to_string(offset) + ": unusable trace event: " +
                          simdjson::error_message(code),
                      0, offset);
  }

  trace result_;
  const char* base_ = nullptr;
  const char* current_event_ = nullptr;  // start of the event being read, for error messages
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread_names_;
  std::unordered_map<std::int64_t, std::size_t> record_by_correlation_;
  std::vector<std::pair<std::size_t, std::int64_t>> pending_waits_;
};

}  // namespace

trace parse_trace(std::string_view json, std::string source) {
  return reader(std::move(source)).parse(json, json.size());
}

trace read_trace(const std::filesystem::path& file) {
  const std::string json = detail::load_maybe_gzipped(file, simdjson::SIMDJSON_PADDING);
  return reader(file.string()).parse(json, json.capacity());
}

}  // namespace streamsafe::monitor
