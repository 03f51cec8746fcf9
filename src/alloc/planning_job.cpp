#include "alloc/planning_job.hpp"

#include <thread>
#include <utility>

#include "common/expects.hpp"

namespace streamsafe::detail {

namespace {

void plan(planning_state& s) noexcept {
  try {
    s.plan = plan_offsets(s.lifetimes, s.period, s.boundaries);
    s.peak_live = peak_live_bytes(s.lifetimes, s.period);
  } catch (...) {
    s.error = std::current_exception();
  }
  s.done.store(true, std::memory_order_release);
}

}  // namespace

planning_job::planning_job(std::vector<cyclic_lifetime> lifetimes, std::uint64_t period,
                           std::vector<std::size_t> boundaries)
    : state_(std::make_shared<planning_state>()) {
  state_->lifetimes = std::move(lifetimes);
  state_->period = period;
  state_->boundaries = std::move(boundaries);
  try {
    // Detached, holding its own share of the state: the allocator never waits for a job it
    // gave up, and its destruction does not either.
    std::thread([state = state_] { plan(*state); }).detach();
  } catch (...) {
    plan(*state_);  // no thread to be had: the caller pays the time, the plan is the same
  }
}

const planning_state& planning_job::result() const {
  SS_EXPECTS(ready(), "planning_job::result: the plan is not done");
  if (state_->error) std::rethrow_exception(state_->error);
  return *state_;
}

}  // namespace streamsafe::detail
