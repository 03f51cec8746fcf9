#include "streamsafe/pipeline/collectives/communicator.hpp"

#include "common/expects.hpp"
#include "pipeline/collectives/all_reduce_record.hpp"

namespace streamsafe::collectives {

std::size_t size_of(data_type type) {
  switch (type) {
    case data_type::float32: return sizeof(float);
  }
  return 0;
}

namespace detail {

collective_record all_reduce_record(const std::string& who, std::size_t count, data_type type, reduce_op op,
                                    const collective_label& label) {
  SS_EXPECTS(type == data_type::float32 && op == reduce_op::sum, who, ": all_reduce '", label.name,
             "': only float32 sum is implemented");
  return collective_record{
      .kind = collective_kind::all_reduce, .bucket = label.bucket, .bytes = count * size_of(type), .name = label.name};
}

}  // namespace detail

}  // namespace streamsafe::collectives
