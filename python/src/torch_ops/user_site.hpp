// The user's line that made an op, found from C++: the innermost Python frame whose file is not
// under a skipped prefix (torch's and streamsafe's directories), as streamsafe.torch._sites finds
// it. A lookup walks frame objects and reads a line number; the text 'file:line' is built by the
// caller only for a site it has not seen (user_sites::loc).
//
// Threads: call with the GIL held. Code objects seen are kept alive by the cache, so their
// addresses stay unique keys.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace streamsafe::python {

// A frame's code object and instruction: many instructions make one line, but the instruction
// is read without the line table (the line is looked up once per site, by loc()).
struct user_site {
  PyObject* code = nullptr;  // nullptr: no user frame (autograd's threads, C++)
  int instruction = 0;

  bool operator==(const user_site& other) const { return code == other.code && instruction == other.instruction; }
};

class user_sites {
 public:
  /// `shown(filename) -> str` renders a file name; `no_frame` is the text for a missing frame.
  user_sites(std::vector<std::string> skip_prefixes, pybind11::object shown, std::string no_frame)
      : skip_(std::move(skip_prefixes)), shown_(std::move(shown)), no_frame_(std::move(no_frame)) {}

  /// The innermost frame of the calling thread outside the skipped prefixes.
  user_site current();
  /// 'file:line' of `site`.
  std::string loc(const user_site& site) const;

 private:
  static int line_of(PyObject* code, int instruction);

  bool skipped(PyObject* code);

  std::vector<std::string> skip_;
  pybind11::object shown_;
  std::string no_frame_;
  std::unordered_map<PyObject*, bool> skipped_;
  std::vector<pybind11::object> kept_;  // the code objects skipped_ is keyed by
};

}  // namespace streamsafe::python
