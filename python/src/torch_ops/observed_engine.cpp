#include "observed_engine.hpp"

#include <ATen/Context.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <iostream>

#include "tensor_ranges.hpp"

namespace py = pybind11;

namespace streamsafe::python {
namespace {

std::atomic<observed_engine*> active{nullptr};
thread_local const op_info* open_op = nullptr;  // the seen op running on this thread: the ops it calls are its own

struct op_context : at::ObserverContext {
  observed_engine* engine = nullptr;
  const op_info* info = nullptr;
  std::vector<touched_tensor> touched;
  std::optional<c10::Stream> stream_arg;
  bool record_function_off = false;
};

bool is_arg_tensor(const at::Tensor& t) {
  // A Python scalar becomes a wrapped number: the dispatch mode sees the scalar, not a tensor.
  return t.defined() && !t.unsafeGetTensorImpl()->is_wrapped_number();
}

void add_tensors(const c10::IValue& value, bool write, std::vector<touched_tensor>& out) {
  if (value.isTensor()) {
    if (is_arg_tensor(value.toTensor())) out.push_back({value.toTensor(), write});
  } else if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorVector()) {
      if (is_arg_tensor(t)) out.push_back({t, write});
    }
  } else if (value.isList()) {
    for (const auto& item : value.toListRef()) add_tensors(item, write, out);
  }
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (open_op != nullptr) {
    open_op->nests.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  auto* engine = active.load(std::memory_order_acquire);
  if (engine == nullptr) return nullptr;
  const op_info* info = engine->info_for(fn);
  if (info == nullptr || info->transparent) return nullptr;
  open_op = info;
  auto ctx = std::make_unique<op_context>();
  if (info->nests.load(std::memory_order_relaxed)) {
    // Until its end the ops it calls take the dispatcher's fast path instead of boxing their
    // inputs for a callback that drops them.
    at::enableRecordFunction(false);
    ctx->record_function_off = true;
  }
  ctx->engine = engine;
  ctx->info = info;
  if (!info->skip || info->record_stream) {
    const auto inputs = fn.inputs();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (info->record_stream && inputs[i].isStream()) ctx->stream_arg = inputs[i].toStream();
      add_tensors(inputs[i], i < info->writes.size() && info->writes[i], ctx->touched);
    }
  }
  return ctx;
}

void add_fresh_outputs(const std::vector<c10::IValue>& outputs, std::vector<touched_tensor>& touched) {
  std::vector<touched_tensor> results;
  for (const auto& value : outputs) add_tensors(value, true, results);
  const auto inputs = touched.size();
  for (auto& result : results) {
    bool seen = false;
    for (std::size_t i = 0; i < inputs && !seen; ++i) {
      seen = touched[i].tensor.unsafeGetTensorImpl() == result.tensor.unsafeGetTensorImpl();
    }
    if (!seen) touched.push_back(std::move(result));
  }
}

// Re-enables RecordFunction on this thread, if the seen op turned it off, once its handling is
// done: what that handling runs (deferred trace calls) is the sanitizer's, not the program's.
struct reenable_record_function {
  bool off;
  ~reenable_record_function() {
    if (off) at::enableRecordFunction(true);
  }
};

// The GIL for one op's handling. A thread Python does not know (autograd's device threads) gets
// a thread state at its first op and keeps it: made and dropped per op it would cost more than
// the op's handling.
class gil_for_op {
 public:
  gil_for_op() : state_(PyGILState_Ensure()) {
    thread_local const bool kept = (PyGILState_Ensure(), true);  // never released: the state stays
    (void)kept;
  }
  ~gil_for_op() { PyGILState_Release(state_); }
  gil_for_op(const gil_for_op&) = delete;
  gil_for_op& operator=(const gil_for_op&) = delete;

 private:
  PyGILState_STATE state_;
};

void on_end(const at::RecordFunction& fn, at::ObserverContext* raw) {
  if (raw == nullptr) return;
  open_op = nullptr;
  auto* ctx = static_cast<op_context*>(raw);
  const reenable_record_function reenable{ctx->record_function_off};
  if (ctx->info->skip && !ctx->info->record_stream && !ctx->engine->has_deferred.load()) return;
  const gil_for_op gil;
  if (active.load(std::memory_order_acquire) != ctx->engine) return;
  try {
    if (!ctx->info->skip) add_fresh_outputs(fn.outputs(), ctx->touched);
    ctx->engine->on_op(*ctx->info, ctx->touched, ctx->stream_arg);
  } catch (const std::exception& e) {
    // RecordFunction callbacks cannot throw into the program: say so and go on.
    std::cerr << "streamsafe: the native tier failed on " << ctx->info->name << ": " << e.what() << "\n";
  }
}

}  // namespace

observed_engine::observed_engine(py::object stream_handle, user_sites sites, std::unordered_set<std::string> no_kernel)
    : stream_handle_(std::move(stream_handle)), sites_(std::move(sites)), no_kernel_(std::move(no_kernel)) {}

observed_engine::~observed_engine() { observe(false); }

void observed_engine::observe(bool on) {
  if (on && callback_ == 0) {
    observed_engine* none = nullptr;
    if (!active.compare_exchange_strong(none, this)) {
      throw usage_error("streamsafe._torch_ops: another engine is observing ops already");
    }
    callback_ = at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                          .needsInputs(true)
                                          .needsOutputs(true)
                                          .scopes({at::RecordScope::FUNCTION}));
  } else if (!on && callback_ != 0) {
    at::removeCallback(callback_);
    callback_ = 0;
    active.store(nullptr, std::memory_order_release);
  }
}

const op_info* observed_engine::info_for(const at::RecordFunction& fn) {
  // A schema's name lives as long as its operator: its address identifies the overload.
  const char* key = fn.name();
  std::lock_guard<std::mutex> lock(infos_mutex_);
  const auto found = infos_.find(key);
  if (found != infos_.end()) return found->second.get();
  const auto schema = fn.operator_schema();
  if (!schema) return nullptr;  // a named scope, not an op
  return infos_.emplace(key, make_op_info(*schema, no_kernel_)).first->second.get();
}

bool observed_engine::in_op() const { return open_op != nullptr || hold_trace; }

void observed_engine::replay_deferred() {
  auto calls = std::move(deferred_);
  deferred_.clear();
  has_deferred = false;
  for (auto& call : calls) call();
}

void observed_engine::on_op(const op_info& info, std::vector<touched_tensor>& touched,
                            const std::optional<c10::Stream>& stream_arg) {
  if (info.record_stream) {
    if (!lifetimes_from_allocator && !touched.empty() && stream_arg) {
      record_lifetime_stream(storage_base(touched.front().tensor), stream(raw_stream(*stream_arg)),
                             op_label("record_stream"));
    }
  } else if (!info.skip) {
    access(info.name, touched);
  }
  replay_deferred();
}

std::size_t observed_engine::access_tensors(const std::string& op_name, const std::vector<touched_tensor>& touched) {
  return access(op_name, touched);
}

std::size_t observed_engine::access(const std::string& op_name, const std::vector<touched_tensor>& touched) {
  if (touched.empty()) return 0;
  const auto on = op_stream(touched);
  reads_.clear();
  writes_.clear();
  if (!on) {
    if (host_shared_.empty()) return 0;
    for (const auto& t : touched) {
      if (host_shared_.count(storage_base(t.tensor)) != 0) append_byte_ranges(t.tensor, t.write ? writes_ : reads_);
    }
    if (reads_.empty() && writes_.empty()) return 0;
    keep(op_name, std::nullopt);
    const auto label = op_label(op_name);
    return counted([&] { engine_.host_access(reads_, writes_, site(label)); });
  }
  const auto label = op_label(op_name);
  for (const auto& t : touched) {
    if (!pending_.empty()) start_lifetime(t.tensor);
    if (!t.tensor.is_cuda()) {
      if (!fake_stream && !at::globalContext().isPinnedPtr(t.tensor.data_ptr())) continue;
      host_shared_.insert(storage_base(t.tensor));
    }
    append_byte_ranges(t.tensor, t.write ? writes_ : reads_);
  }
  keep(op_name, on);
  return counted([&] { engine_.access(sid(*on), reads_, writes_, site(label)); });
}

void observed_engine::keep(const std::string& op_name, std::optional<std::uint64_t> stream) {
  if (!record_accesses) return;
  py::list ranges;
  for (const auto& r : reads_) ranges.append(py::make_tuple(r.first, r.size, false));
  for (const auto& r : writes_) ranges.append(py::make_tuple(r.first, r.size, true));
  recorded.append(py::make_tuple(op_name, stream ? py::object(py::int_(*stream)) : py::object(py::none()), ranges));
}

std::optional<std::uint64_t> observed_engine::op_stream(const std::vector<touched_tensor>& touched) {
  if (fake_stream) return fake_stream;
  for (const auto& t : touched) {
    if (t.tensor.is_cuda()) {
      const auto* guard = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
      return stream(raw_stream(guard->getStream(t.tensor.device())));
    }
  }
  return std::nullopt;
}

std::uint64_t observed_engine::raw_stream(const c10::Stream& s) {
  const auto key = (static_cast<std::uint64_t>(s.device_index()) << 56) ^ static_cast<std::uint64_t>(s.id());
  const auto found = raw_streams_.find(key);
  if (found != raw_streams_.end()) return found->second;
  const auto handle = stream_handle_(s.id(), s.device_index(), static_cast<int>(s.device_type())).cast<std::uint64_t>();
  raw_streams_.emplace(key, handle);
  return handle;
}

std::uint32_t observed_engine::op_label(const std::string& op_name) {
  const std::string* name = &*names_.insert(op_name).first;
  const site_key key{name, sites_.current()};
  const auto found = labels_.find(key);
  if (found != labels_.end()) return found->second;
  const auto id = label(op_name, sites_.loc(key.site));
  labels_.emplace(key, id);
  return id;
}

void observed_engine::start_lifetime(const at::Tensor& tensor) {
  const auto found = pending_.find(storage_base(tensor));
  if (found == pending_.end()) return;
  const auto [stream, label] = found->second;
  const auto base = found->first;
  pending_.erase(found);
  alloc_lifetime(base, tensor.storage().nbytes(), stream, label);
}

void observed_engine::pending_alloc(std::uint64_t ptr, std::uint64_t stream, std::uint32_t label) {
  pending_[ptr] = {stream, label};
}

std::size_t observed_engine::alloc_lifetime(std::uint64_t ptr, std::uint64_t size, std::uint64_t stream,
                                            std::uint32_t label) {
  try {
    const auto found = alloc(ptr, size, stream, label);
    live_.insert(ptr);
    return found;
  } catch (const usage_error&) {
    ++model_errors;  // a lifetime the callbacks could not pair (docs/pytorch.md)
    return 0;
  }
}

std::size_t observed_engine::free_lifetime(std::uint64_t ptr, std::uint32_t label) {
  if (live_.erase(ptr) == 0) return 0;
  return free(ptr, label);
}

void observed_engine::record_lifetime_stream(std::uint64_t ptr, std::uint64_t stream, std::uint32_t label) {
  try {
    record_stream(ptr, stream, label);
  } catch (const usage_error&) {
    // not a lifetime the sanitizer saw start: nothing to extend
  }
}

}  // namespace streamsafe::python
