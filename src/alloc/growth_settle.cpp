// Settle growth (expandable_growth::settle): as map_new, with every free block chosen by best
// fit, the lowest address among equals, so that a workload repeating its requests takes the same
// (still mapped) ranges again.
#include <memory>
#include <mutex>

#include "alloc/mapped_growth.hpp"

namespace streamsafe::detail {

namespace {

class settle_growth final : public mapped_growth {
 public:
  using mapped_growth::mapped_growth;

  void prepare(stream_pool& pool) const override {
    std::lock_guard lock(pool.mutex);  // a thread's stale guess may still look into a reused pool
    pool.use_best_fit();
  }
};

}  // namespace

std::unique_ptr<growth_policy> make_settle_growth(const growth_context& context) {
  return std::make_unique<settle_growth>(context);
}

}  // namespace streamsafe::detail
