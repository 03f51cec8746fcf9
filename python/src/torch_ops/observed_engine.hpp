// The native tier's engine: py_engine plus what the Python tier's Session keeps per op (the
// lifetimes the trace's allocations start, the host buffers a stream touched, the fake stream of
// the tests), and an at::RecordFunction observer that feeds it every aten op the Python tier's
// dispatch mode would see, with no Python per op.
//
// Which ops: the outermost op on a thread that is not CompositeImplicitAutograd (those decompose
// above the backend, so their parts are the ops); ops it calls are inside it and not seen, as
// under a dispatch mode. Each seen op is handled at its end (its outputs exist), under the GIL,
// so it reaches the engine in host order with the trace callbacks, which Python still makes.
//
// Threads: ops may end on any thread (autograd's); each takes the GIL. Every method bound to
// Python runs under the GIL. One engine observes at a time (observe()).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/record_function.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../py_engine.hpp"
#include "op_info.hpp"
#include "user_site.hpp"

namespace streamsafe::python {

struct touched_tensor {
  at::Tensor tensor;
  bool write = false;
};

class observed_engine : public py_engine {
 public:
  /// `stream_handle(stream_id, device_index, device_type) -> int` gives the raw handle of a
  /// c10::Stream (asked once per stream); `sites` finds user call sites; `no_kernel` names the
  /// ops that touch no bytes.
  observed_engine(pybind11::object stream_handle, user_sites sites, std::unordered_set<std::string> no_kernel);
  ~observed_engine();
  observed_engine(const observed_engine&) = delete;
  observed_engine& operator=(const observed_engine&) = delete;

  /// Starts (or stops) feeding this engine every aten op of the process.
  void observe(bool on);

  // -- the Session's model, as the Python tier keeps it ------------------------------------
  std::optional<std::uint64_t> fake_stream;  // ops run on this stream, CPU tensors included
  bool lifetimes_from_allocator = false;
  std::size_t model_errors = 0;

  void pending_alloc(std::uint64_t ptr, std::uint64_t stream, std::uint32_t label);
  void drop_pending(std::uint64_t ptr) { pending_.erase(ptr); }
  void clear_pending() { pending_.clear(); }
  std::size_t alloc_lifetime(std::uint64_t ptr, std::uint64_t size, std::uint64_t stream, std::uint32_t label);
  [[nodiscard]] bool is_live(std::uint64_t ptr) const { return live_.count(ptr) != 0; }
  std::size_t free_lifetime(std::uint64_t ptr, std::uint32_t label);
  void record_lifetime_stream(std::uint64_t ptr, std::uint64_t stream, std::uint32_t label);

  /// Inside an op on this thread (or held by a test): trace calls are deferred (defer) and run
  /// after the op's own access, which is when they happen on the device.
  [[nodiscard]] bool in_op() const;
  bool hold_trace = false;
  void defer(pybind11::object call) {
    deferred_.push_back(std::move(call));
    has_deferred = true;
  }

  /// One op the observer cannot see (annotate): `touched` as (tensor, is_write).
  std::size_t access_tensors(const std::string& op_name, const std::vector<touched_tensor>& touched);

  /// Test hook: keeps (op, stream or None, [(ptr, bytes, is_write)]) of every access.
  bool record_accesses = false;
  pybind11::list recorded;

  // -- the observer's side (observed_engine.cpp) --------------------------------------------
  const op_info* info_for(const at::RecordFunction& fn);
  void on_op(const op_info& info, std::vector<touched_tensor>& touched, const std::optional<c10::Stream>& stream_arg);
  void replay_deferred();
  std::atomic<bool> has_deferred{false};

 private:
  struct pending {
    std::uint64_t stream;
    std::uint32_t label;
  };
  struct site_key {
    const std::string* op;
    user_site site;
    bool operator==(const site_key& o) const { return op == o.op && site == o.site; }
  };
  struct site_hash {
    std::size_t operator()(const site_key& k) const {
      return std::hash<const void*>()(k.op) ^ (std::hash<const void*>()(k.site.code) * 31) ^ std::size_t(k.site.instruction);
    }
  };

  std::size_t access(const std::string& op_name, const std::vector<touched_tensor>& touched);
  std::optional<std::uint64_t> op_stream(const std::vector<touched_tensor>& touched);
  std::uint64_t raw_stream(const c10::Stream& stream);
  std::uint32_t op_label(const std::string& op_name);
  void start_lifetime(const at::Tensor& tensor);
  void keep(const std::string& op_name, std::optional<std::uint64_t> stream);

  pybind11::object stream_handle_;
  user_sites sites_;
  std::unordered_set<std::string> no_kernel_;
  std::unordered_set<std::string> names_;  // interned op names: site_key points into it
  std::unordered_map<site_key, std::uint32_t, site_hash> labels_;
  std::unordered_map<std::uint64_t, pending> pending_;
  std::unordered_set<std::uint64_t> live_;
  std::unordered_set<std::uint64_t> host_shared_;
  std::unordered_map<std::uint64_t, std::uint64_t> raw_streams_;  // (device, stream id) -> handle
  std::vector<pybind11::object> deferred_;

  std::mutex infos_mutex_;  // ops start on any thread, without the GIL
  std::unordered_map<const char*, std::unique_ptr<op_info>> infos_;
  at::CallbackHandle callback_ = 0;
};

}  // namespace streamsafe::python
