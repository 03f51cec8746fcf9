#include "sim_torch_backend.hpp"

namespace streamsafe::torch_alloc {

namespace testing {

native_stream fake_handle(std::uintptr_t value) { return reinterpret_cast<native_stream>(value); }

torch_backend sim_torch_backend(std::shared_ptr<sim_torch_state> state) {
  return {
      .device = [state](int) { return state->device; },
      .adopt =
          [state](const Device& device, native_stream native) {
            std::lock_guard lock(state->mutex);
            Stream stream(device, state->plans[native]);
            state->adopted.insert_or_assign(native, StreamRef(stream));
            return stream;
          },
      .capturing =
          [state](native_stream native) {
            if (!state->any_capturing.load(std::memory_order_acquire)) return false;
            std::lock_guard lock(state->mutex);
            return state->capturing.contains(native);
          },
  };
}

}  // namespace testing

torch_backend default_backend() { return testing::sim_torch_backend(std::make_shared<testing::sim_torch_state>()); }

}  // namespace streamsafe::torch_alloc
