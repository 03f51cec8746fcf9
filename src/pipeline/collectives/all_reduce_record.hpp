// What both communicators do first in all_reduce: check what is implemented, and name the
// collective for the order check.
#pragma once

#include <cstddef>
#include <string>

#include "streamsafe/pipeline/collectives/communicator.hpp"

namespace streamsafe::collectives::detail {

/// The order check's record of an all-reduce of `count` elements; throws usage_error, naming
/// `who` and the collective, for anything but float32 sum.
[[nodiscard]] collective_record all_reduce_record(const std::string& who, std::size_t count, data_type type,
                                                  reduce_op op, const collective_label& label);

}  // namespace streamsafe::collectives::detail
