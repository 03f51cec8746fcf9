// streamsafe._engine: the hazard engine for Python (py_engine.hpp), shaped for a sanitizer that
// sees one op at a time.
#include <pybind11/pybind11.h>

#include "py_engine.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_engine, m) {
  m.doc() = "streamsafe's happens-before hazard engine (docs/hazards.md), one packed call per op.";
  py::register_exception<streamsafe::usage_error>(m, "UsageError", PyExc_ValueError);
  py::class_<streamsafe::python::py_engine> cls(m, "Engine",
                                                "One engine in report mode. Every call is an op in program order.");
  cls.def(py::init<>());
  streamsafe::python::def_engine(cls);
}
