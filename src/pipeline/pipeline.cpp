#include "streamsafe/pipeline/pipeline.hpp"

#include "pipeline_state.hpp"
#include "run_session.hpp"

namespace streamsafe::pipeline {

namespace {

std::string describe(const std::exception_ptr& cause) {
  if (!cause) return "no cause recorded";
  try {
    std::rethrow_exception(cause);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

std::vector<Stream> make_streams(const Device& device, const pipeline_spec& spec) {
  std::vector<Stream> streams;
  streams.reserve(spec.stages.size());
  for (const stage_spec& stage : spec.stages) {
    stream_options options = stage.stream;
    if (options.name.empty()) options.name = stage.name;
    streams.emplace_back(device, options);
  }
  return streams;
}

}  // namespace

pipeline_error::pipeline_error(std::size_t batch, std::string stage, std::exception_ptr cause)
    : error("pipeline: batch " + std::to_string(batch) + ", stage '" + stage + "': " + describe(cause)),
      batch_(batch),
      stage_(std::move(stage)),
      cause_(std::move(cause)) {}

pipeline::state::state(const Device& device_in, caching_allocator& allocator_in, pipeline_spec spec_in,
                       hazard::tracker* hazards_in)
    : device(device_in),
      allocator(allocator_in),
      spec(std::move(spec_in)),
      graph(detail::build_graph(spec)),
      streams(make_streams(device, spec)),
      events(device),
      hazards(hazards_in) {
  if (!(allocator.device() == device)) throw usage_error("pipeline: the allocator belongs to another device");
}

pipeline::pipeline(const Device& device, caching_allocator& allocator, pipeline_spec spec, hazard::tracker* hazards)
    : state_(std::make_unique<state>(device, allocator, std::move(spec), hazards)) {}

pipeline::~pipeline() = default;

run_stats pipeline::run(std::size_t batches, run_mode mode) {
  if (state_->running) throw usage_error("pipeline: run() called while a run is in progress");
  state_->running = true;
  struct running_flag {
    bool& flag;
    ~running_flag() { flag = false; }
  } reset{state_->running};
  detail::run_session session(*state_, mode);
  return session.run(batches);
}

std::size_t pipeline::stage_count() const { return state_->spec.stages.size(); }
const stage_spec& pipeline::stage(std::size_t index) const { return state_->spec.stages.at(index); }
StreamRef pipeline::stream_of(std::size_t stage) const { return state_->streams.at(stage); }
const pipeline_spec& pipeline::spec() const { return state_->spec; }

}  // namespace streamsafe::pipeline
