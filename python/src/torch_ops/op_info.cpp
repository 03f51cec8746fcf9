#include "op_info.hpp"

#include <ATen/core/dispatch/Dispatcher.h>

namespace streamsafe::python {

std::unique_ptr<op_info> make_op_info(const c10::FunctionSchema& schema,
                                      const std::unordered_set<std::string>& no_kernel) {
  auto made = std::make_unique<op_info>();
  op_info& info = *made;
  info.name = schema.name();
  const auto handle = c10::Dispatcher::singleton().findOp(schema.operator_name());
  info.transparent = handle && handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
  bool view = false;
  for (const auto& ret : schema.returns()) {
    view = view || (ret.alias_info() != nullptr && !ret.alias_info()->isWrite());
  }
  info.skip = view || no_kernel.count(info.name) != 0;
  info.record_stream = info.name == "aten::record_stream";
  for (const auto& arg : schema.arguments()) {
    info.writes.push_back(arg.alias_info() != nullptr && arg.alias_info()->isWrite());
  }
  return made;
}

}  // namespace streamsafe::python
