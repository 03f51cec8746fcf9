#include "streamsafe/pipeline/collectives/communicator.hpp"

namespace streamsafe::collectives {

std::size_t size_of(data_type type) {
  switch (type) {
    case data_type::float32: return sizeof(float);
  }
  return 0;
}

}  // namespace streamsafe::collectives
