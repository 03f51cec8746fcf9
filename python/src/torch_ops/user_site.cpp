#include "user_site.hpp"

#include <frameobject.h>

namespace py = pybind11;

namespace streamsafe::python {

bool user_sites::skipped(PyObject* code) {
  const auto found = skipped_.find(code);
  if (found != skipped_.end()) return found->second;
  const auto filename = py::reinterpret_borrow<py::object>(code).attr("co_filename").cast<std::string>();
  bool skip = false;
  for (const auto& prefix : skip_) skip = skip || filename.rfind(prefix, 0) == 0;
  kept_.push_back(py::reinterpret_borrow<py::object>(code));
  skipped_.emplace(code, skip);
  return skip;
}

user_site user_sites::current() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  while (frame != nullptr) {
    auto* code = reinterpret_cast<PyObject*>(PyFrame_GetCode(frame));  // new reference
    const bool skip = skipped(code);
    Py_DECREF(code);  // the cache holds one
    if (!skip) {
      const user_site site{code, PyFrame_GetLasti(frame)};
      Py_DECREF(frame);
      return site;
    }
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  return {};
}

std::string user_sites::loc(const user_site& site) const {
  if (site.code == nullptr) return no_frame_;
  const auto filename = py::reinterpret_borrow<py::object>(site.code).attr("co_filename");
  return shown_(filename).cast<std::string>() + ":" + std::to_string(line_of(site.code, site.instruction));
}

int user_sites::line_of(PyObject* code, int instruction) {
  return PyCode_Addr2Line(reinterpret_cast<PyCodeObject*>(code), instruction);
}

}  // namespace streamsafe::python
