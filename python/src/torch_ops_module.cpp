// streamsafe._torch_ops: the sanitizer's native tier (docs/pytorch.md). Its Engine is
// streamsafe._engine's plus an op observer in C++ (torch_ops/observed_engine.hpp) and the model
// the Python Session keeps per op; streamsafe.torch.sanitize drives it under tier="native".
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>

#include "py_engine.hpp"
#include "torch_ops/observed_engine.hpp"
#include "torch_ops/tensor_ranges.hpp"

namespace py = pybind11;
namespace ssp = streamsafe::python;

namespace {

const at::Tensor& unpack_tensor(py::handle obj, const char* what) {
  if (!THPVariable_Check(obj.ptr())) throw py::type_error(std::string(what) + ": expected a torch.Tensor");
  return THPVariable_Unpack(obj.ptr());
}

// [(tensor, is_write)] from Python, as Session.annotate builds it.
std::vector<ssp::touched_tensor> unpack_touched(py::iterable touched) {
  std::vector<ssp::touched_tensor> out;
  for (py::handle item : touched) {
    auto pair = item.cast<py::tuple>();
    out.push_back({unpack_tensor(pair[0], "access_tensors"), pair[1].cast<bool>()});
  }
  return out;
}

py::list byte_ranges(py::handle tensor) {
  std::vector<streamsafe::hazard::byte_range> ranges;
  ssp::append_byte_ranges(unpack_tensor(tensor, "byte_ranges"), ranges);
  py::list out;
  for (const auto& r : ranges) out.append(py::make_tuple(r.first, r.size));
  return out;
}

std::unique_ptr<ssp::observed_engine> make_engine(py::object stream_handle, std::vector<std::string> skip_prefixes,
                                                  py::object shown, std::string no_frame,
                                                  std::unordered_set<std::string> no_kernel) {
  return std::make_unique<ssp::observed_engine>(
      std::move(stream_handle), ssp::user_sites(std::move(skip_prefixes), std::move(shown), std::move(no_frame)),
      std::move(no_kernel));
}

PyObject* usage_error_type = nullptr;  // held for the life of the process

void translate_usage_error(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const streamsafe::usage_error& e) {
    PyErr_SetString(usage_error_type, e.what());
  }
}

}  // namespace

PYBIND11_MODULE(_torch_ops, m) {
  m.doc() = "The sanitizer's native tier: streamsafe's engine fed by an at::RecordFunction op observer.";
  // The engine's usage errors are streamsafe._engine.UsageError here too.
  usage_error_type = py::object(py::module_::import("streamsafe._engine").attr("UsageError")).release().ptr();
  py::register_exception_translator(&translate_usage_error);

  m.def("byte_ranges", &byte_ranges, py::arg("tensor"),
        "[(ptr, bytes)] `tensor` may touch: the native tier's rule (streamsafe.torch._ranges').");

  py::class_<ssp::observed_engine> cls(m, "Engine",
                                       "streamsafe._engine.Engine plus the native op observer and the "
                                       "Session's model of lifetimes. Every call is an op in program order.");
  streamsafe::python::def_engine(cls);
  cls.def(py::init(&make_engine), py::arg("stream_handle"), py::arg("skip_prefixes"), py::arg("shown"),
          py::arg("no_frame"), py::arg("no_kernel"))
      .def("observe", &ssp::observed_engine::observe, py::arg("on"),
           "Starts or stops feeding this engine every aten op of the process (one engine at a time).")
      .def_readwrite("fake_stream", &ssp::observed_engine::fake_stream)
      .def_readwrite("lifetimes_from_allocator", &ssp::observed_engine::lifetimes_from_allocator)
      .def_readonly("model_errors", &ssp::observed_engine::model_errors)
      .def_readwrite("hold_trace", &ssp::observed_engine::hold_trace)
      .def_readwrite("record_accesses", &ssp::observed_engine::record_accesses)
      .def_readonly("recorded", &ssp::observed_engine::recorded)
      .def("in_op", &ssp::observed_engine::in_op)
      .def("defer", &ssp::observed_engine::defer, py::arg("call"),
           "Runs `call()` after the op in flight (a trace call made inside an op).")
      .def("pending_alloc", &ssp::observed_engine::pending_alloc, py::arg("ptr"), py::arg("stream"), py::arg("label"))
      .def("drop_pending", &ssp::observed_engine::drop_pending, py::arg("ptr"))
      .def("clear_pending", &ssp::observed_engine::clear_pending)
      .def("alloc_lifetime", &ssp::observed_engine::alloc_lifetime, py::arg("ptr"), py::arg("size"),
           py::arg("stream"), py::arg("label"))
      .def("is_live", &ssp::observed_engine::is_live, py::arg("ptr"))
      .def("free_lifetime", &ssp::observed_engine::free_lifetime, py::arg("ptr"), py::arg("label"))
      .def("record_lifetime_stream", &ssp::observed_engine::record_lifetime_stream, py::arg("ptr"),
           py::arg("stream"), py::arg("label"))
      .def("access_tensors", [](ssp::observed_engine& e, const std::string& op, py::iterable touched) {
        return e.access_tensors(op, unpack_touched(touched));
      }, py::arg("op"), py::arg("touched"), "One op the observer cannot see: touched is [(tensor, is_write)].");
}
