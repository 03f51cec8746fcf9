// Which implementation runs a Device's streams.
#pragma once

#include <string_view>

namespace streamsafe {

enum class backend_kind {
  cuda,  ///< the CUDA runtime on a real GPU
  sim,   ///< host memory as device memory, streams as in-order queues, a seeded scheduler
};

[[nodiscard]] constexpr std::string_view to_string(backend_kind kind) noexcept {
  switch (kind) {
    case backend_kind::cuda: return "cuda";
    case backend_kind::sim: return "sim";
  }
  return "?";
}

}  // namespace streamsafe
