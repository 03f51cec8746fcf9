// What every build of the nccl communicator shares (with or without the cuda backend).
#include "pipeline/collectives/fnv1a.hpp"
#include "streamsafe/pipeline/collectives/nccl_communicator.hpp"

namespace streamsafe::collectives {

std::uint64_t nccl_unique_id::hash() const noexcept {
  std::uint64_t hash = detail::fnv_offset;
  for (const char c : bytes) hash = detail::fnv_byte(hash, static_cast<unsigned char>(c));
  return hash;
}

}  // namespace streamsafe::collectives
