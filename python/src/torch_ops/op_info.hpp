// What an aten op overload does to its tensors, from its schema, computed once per overload: the
// C++ twin of streamsafe.torch._ops.Signature. `transparent` ops (CompositeImplicitAutograd:
// decomposed above the backend, so the Python tier's dispatch mode sees their parts, never them)
// are not ops of their own: the ops they call are.
#pragma once

#include <ATen/core/function_schema.h>

#include <atomic>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace streamsafe::python {

struct op_info {
  std::string name;         // "aten::mul_": the schema's name, without the overload
  bool transparent = false;
  bool skip = false;        // a view or an op that launches no kernel: touches no bytes
  bool record_stream = false;
  std::vector<bool> writes;  // per schema argument: its alias info says is_write
  // Seen calling other ops: its later calls run with RecordFunction off on their thread (the
  // ops it calls are its own), which costs less than boxing their inputs for nothing, and more
  // than nothing for an op that calls none.
  mutable std::atomic<bool> nests{false};
};

/// The access pattern of `schema`; `no_kernel` names the ops that touch no bytes.
std::unique_ptr<op_info> make_op_info(const c10::FunctionSchema& schema, const std::unordered_set<std::string>& no_kernel);

}  // namespace streamsafe::python
