#include "alloc/growth_policy.hpp"

namespace streamsafe::detail {

std::unique_ptr<growth_policy> make_growth_policy(const growth_context& context, bool expandable) {
  if (!expandable) return make_fixed_growth(context);
  switch (context.options.growth) {
    case expandable_growth::remap: return make_remap_growth(context);
    case expandable_growth::map_new: return make_map_new_growth(context);
    case expandable_growth::settle: return make_settle_growth(context);
  }
  return make_map_new_growth(context);
}

}  // namespace streamsafe::detail
