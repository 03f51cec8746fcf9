// The engine as the Python package sees it (py_engine) and its method table (def_engine), shared
// by streamsafe._engine and the native torch tier (streamsafe._torch_ops), whose engine extends it.
//
// Each op is one call carrying all of its byte ranges, so the per-op cost is one crossing into C++
// however many tensors the op touches. Every call is an op in program order: the engine numbers
// them (the `line` of a report) and hands back how many new hazards the call found, so the caller
// pays for turning findings into Python objects only when there are some.
//
// Thread safety: none, as the engine's. The Python caller serializes (the GIL does, as long as
// the caller does not release it between its own calls).
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "streamsafe/error.hpp"
#include "streamsafe/hazard/engine.hpp"
#include "streamsafe/hazard/report_text.hpp"

namespace streamsafe::python {

namespace py = pybind11;
namespace hz = streamsafe::hazard;


inline const char* role_name(hz::op_role role) {
  switch (role) {
    case hz::op_role::read: return "read";
    case hz::op_role::write: return "write";
    case hz::op_role::free: return "free";
    case hz::op_role::wait: return "wait";
  }
  return "?";
}

inline py::dict op_dict(const hz::op_ref& op) {
  py::dict d;
  d["line"] = op.line;
  d["op"] = op.op;
  d["stream"] = op.stream;
  d["loc"] = op.loc;
  d["role"] = role_name(op.role);
  return d;
}

inline py::dict hazard_dict(const hz::hazard& h) {
  py::dict d;
  d["kind"] = std::string(hz::kind_name(h.kind));
  d["informational"] = hz::is_informational(h.kind);
  d["first"] = op_dict(h.first);
  d["second"] = op_dict(h.second);
  d["range"] = py::make_tuple(h.range.first, h.range.size);
  d["block"] = h.block;
  d["free"] = op_dict(h.free_op);
  d["alloc"] = op_dict(h.alloc_op);
  d["event"] = h.event;
  d["count"] = h.count;
  d["engine_fix"] = hz::fix_text(h);
  d["text"] = hz::describe(h);
  return d;
}

// Reads (ptr, bytes, is_write) tuples without building pybind11 objects per item: this loop runs
// once per tensor argument of every op the program makes.
inline void unpack_ranges(py::handle ranges, std::vector<hz::byte_range>& reads, std::vector<hz::byte_range>& writes) {
  reads.clear();
  writes.clear();
  PyObject* seq = PySequence_Fast(ranges.ptr(), "ranges must be a sequence of (ptr, bytes, is_write)");
  if (seq == nullptr) throw py::error_already_set();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = items[i];
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 3) {
      Py_DECREF(seq);
      throw py::type_error("range " + std::to_string(i) + " is not a (ptr, bytes, is_write) tuple");
    }
    const auto ptr = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(item, 0));
    const auto size = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(item, 1));
    const int write = PyObject_IsTrue(PyTuple_GET_ITEM(item, 2));
    if (PyErr_Occurred() != nullptr) {
      Py_DECREF(seq);
      throw py::error_already_set();
    }
    if (size == 0) continue;
    (write != 0 ? writes : reads).push_back({ptr, size});
  }
  Py_DECREF(seq);
}

// The engine plus the program-order counter and the cursor of findings already handed out.
class py_engine {
 public:
  std::uint32_t label(const std::string& op, const std::string& loc) {
    return static_cast<std::uint32_t>(engine_.label(op, loc));
  }
  void name_stream(std::uint64_t stream, const std::string& name) {
    engine_.name_stream(sid(stream), name);
    named_streams_.emplace(stream, true);
  }
  /// `stream`, named on first use as the Python tier names it: `default` for the null stream,
  /// else s1, s2, ... counting every stream known so far.
  std::uint64_t stream(std::uint64_t stream) {
    if (named_streams_.count(stream) == 0) {
      name_stream(stream, stream == 0 ? "default" : "s" + std::to_string(named_streams_.size() + 1));
    }
    return stream;
  }

  std::size_t op(std::uint64_t stream, py::handle ranges, std::uint32_t label) {
    unpack_ranges(ranges, reads_, writes_);
    return counted([&] { engine_.access(sid(stream), reads_, writes_, site(label)); });
  }
  std::size_t host_op(py::handle ranges, std::uint32_t label) {
    unpack_ranges(ranges, reads_, writes_);
    return counted([&] { engine_.host_access(reads_, writes_, site(label)); });
  }
  std::size_t alloc(std::uint64_t ptr, std::uint64_t size, std::uint64_t stream, std::uint32_t label) {
    return counted([&] { engine_.alloc(ptr, size, sid(stream), site(label)); });
  }
  std::size_t free(std::uint64_t ptr, std::uint32_t label) {
    return counted([&] { engine_.free(ptr, site(label)); });
  }
  void record_stream(std::uint64_t ptr, std::uint64_t stream, std::uint32_t label) {
    engine_.record_stream(ptr, sid(stream), site(label));
  }
  std::size_t event_record(std::uint64_t event, std::uint64_t stream, std::uint32_t label) {
    return counted([&] { engine_.event_record(eid(event), sid(stream), site(label)); });
  }
  std::size_t stream_wait_event(std::uint64_t stream, std::uint64_t event, std::uint32_t label) {
    return counted([&] { engine_.stream_wait_event(sid(stream), eid(event), site(label)); });
  }
  std::size_t event_sync(std::uint64_t event, std::uint32_t label) {
    return counted([&] { engine_.event_sync(eid(event), site(label)); });
  }
  std::size_t stream_sync(std::uint64_t stream, std::uint32_t label) {
    return counted([&] { engine_.stream_sync(sid(stream), site(label)); });
  }
  std::size_t device_sync(std::uint32_t label) {
    return counted([&] { engine_.device_sync(site(label)); });
  }
  void event_destroy(std::uint64_t event, std::uint32_t label) { engine_.event_destroy(eid(event), site(label)); }

  /// Findings not handed out yet, oldest first.
  py::list take_hazards() {
    py::list out;
    const auto& all = engine_.hazards();
    for (; taken_ < all.size(); ++taken_) out.append(hazard_dict(all[taken_]));
    return out;
  }
  /// Every finding so far, with its current count.
  py::list hazards() const {
    py::list out;
    for (const auto& h : engine_.hazards()) out.append(hazard_dict(h));
    return out;
  }
  [[nodiscard]] std::uint64_t ops() const noexcept { return line_; }
  [[nodiscard]] std::size_t shadow_segments() const noexcept { return engine_.shadow_segments(); }
  [[nodiscard]] std::size_t stream_slots() const noexcept { return engine_.stream_slots(); }

 protected:
  static hz::stream_id sid(std::uint64_t v) { return hz::stream_id{v}; }
  static hz::event_id eid(std::uint64_t v) { return hz::event_id{v}; }
  hz::op_site site(std::uint32_t label) { return {hz::label_id{label}, ++line_}; }

  template <class F>
  std::size_t counted(F&& call) {
    const auto before = engine_.hazards().size();
    call();
    return engine_.hazards().size() - before;
  }

  hz::engine engine_{hz::policy::report};
  std::vector<hz::byte_range> reads_;
  std::vector<hz::byte_range> writes_;
  std::uint64_t line_ = 0;
  std::size_t taken_ = 0;
  std::unordered_map<std::uint64_t, bool> named_streams_;
};

/// The Engine methods of the Python package on `cls` (py_engine or a class extending it).
template <class T, class... Options>
void def_engine(py::class_<T, Options...>& cls) {
  cls.def("label", &T::label, py::arg("op"), py::arg("loc") = "",
           "Interns an (op name, 'file:line') call site; the same pair gives the same id.")
      .def("name_stream", &T::name_stream, py::arg("stream"), py::arg("name"))
      .def("stream", &T::stream, py::arg("stream"),
           "Returns `stream`, named on first use (default, s1, s2, ...) unless name_stream named it.")
      .def("op", &T::op, py::arg("stream"), py::arg("ranges"), py::arg("label"),
           "One op on `stream` touching `ranges`, a sequence of (ptr, bytes, is_write). "
           "Returns the number of new hazards.")
      .def("host_op", &T::host_op, py::arg("ranges"), py::arg("label"),
           "The host touches `ranges` (pinned or host memory). Returns the number of new hazards.")
      .def("alloc", &T::alloc, py::arg("ptr"), py::arg("size"), py::arg("stream"), py::arg("label"),
           "A new lifetime for [ptr, ptr+size) made on `stream`. Raises UsageError on overlap.")
      .def("free", &T::free, py::arg("ptr"), py::arg("label"),
           "Ends the lifetime starting at `ptr`. Raises UsageError unless one starts there.")
      .def("record_stream", &T::record_stream, py::arg("ptr"), py::arg("stream"), py::arg("label"),
           "Adds `stream` to the release point of the live allocation containing `ptr`.")
      .def("event_record", &T::event_record, py::arg("event"), py::arg("stream"), py::arg("label"))
      .def("stream_wait_event", &T::stream_wait_event, py::arg("stream"), py::arg("event"),
           py::arg("label"))
      .def("event_sync", &T::event_sync, py::arg("event"), py::arg("label"))
      .def("stream_sync", &T::stream_sync, py::arg("stream"), py::arg("label"))
      .def("device_sync", &T::device_sync, py::arg("label"))
      .def("event_destroy", &T::event_destroy, py::arg("event"), py::arg("label"))
      .def("take_hazards", &T::take_hazards, "Findings not returned before, as dicts.")
      .def("hazards", &T::hazards, "Every finding so far, as dicts (with current counts).")
      .def_property_readonly("ops", &T::ops)
      .def_property_readonly("shadow_segments", &T::shadow_segments)
      .def_property_readonly("stream_slots", &T::stream_slots);
}

}  // namespace streamsafe::python
