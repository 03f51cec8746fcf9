// The lifetime section comes with the allocator.
#include "demo_sections.hpp"

namespace streamsafe::cli {
std::vector<demo_figure> run_lifetime_demo(const demo_setup&) { return {}; }
}  // namespace streamsafe::cli
