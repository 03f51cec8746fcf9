p='src/alloc/iteration_plan.cpp'
s=open(p).read()
s=s.replace('namespace streamsafe::detail {\n','#include <chrono>\n#include <cstdio>\nnamespace { struct scope_ms { const char* n; std::chrono::steady_clock::time_point t=std::chrono::steady_clock::now(); ~scope_ms(){ std::fprintf(stderr,"%s %.2f ms\\n",n,std::chrono::duration<double,std::milli>(std::chrono::steady_clock::now()-t).count()); } }; }\nnamespace streamsafe::detail {\n',1)
for fn,name in [('bool iteration_plan::activate(repeating_period period, std::unique_ptr<period_planning> planning) {\n','activate'),
 ('void iteration_plan::start_plan(const std::vector<cyclic_lifetime>& lifetimes, const std::vector<std::size_t>& offsets,\n                                plan_book book) {\n','start_plan'),
 ('iteration_plan::planned_blocks iteration_plan::blocks_of(const repeating_period& period) {\n','blocks_of'),
 ('bool iteration_plan::fits_no_free_memory(const repeating_period& period, std::unique_ptr<period_planning>& planning) {\n','fits_no_free_memory'),
 ('void iteration_plan::prepare_switch(std::uint64_t length) noexcept {\n','prepare_switch')]:
    assert fn in s, fn
    s=s.replace(fn, fn+'  scope_ms sm_{"%s"};\n'%name)
open(p,'w').write(s)
p='src/alloc/offset_planner.cpp'
s=open(p).read()
s=s.replace('namespace streamsafe::detail {\n','#include <chrono>\n#include <cstdio>\nnamespace { struct scope_ms { const char* n; std::chrono::steady_clock::time_point t=std::chrono::steady_clock::now(); ~scope_ms(){ std::fprintf(stderr,"%s %.2f ms\\n",n,std::chrono::duration<double,std::milli>(std::chrono::steady_clock::now()-t).count()); } }; }\nnamespace streamsafe::detail {\n',1)
fn='''      conflict_list_(scratch) {
'''
assert fn in s
s=s.replace(fn, fn+'  scope_ms sm_{"planner_ctor"};\n')
fn='offset_plan offset_planner::plan(std::span<const std::size_t> boundaries, const placed_check& stop) const {\n'
s=s.replace(fn, fn+'  scope_ms sm_{"plan"};\n')
open(p,'w').write(s)
