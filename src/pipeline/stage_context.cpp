#include "streamsafe/pipeline/stage_context.hpp"

#include "run_session.hpp"

namespace streamsafe::pipeline {

const std::string& stage_context::stage() const noexcept { return session_.stage_name(stage_); }
StreamRef stage_context::stream() const noexcept { return session_.stream(stage_); }

byte_span stage_context::buffer(std::string_view name) const { return session_.declared(stage_, slot_, batch_, name); }

void stage_context::launch(const kernel& work, std::initializer_list<const_byte_span> reads,
                           std::initializer_list<const_byte_span> writes) {
  session_.launch(stage_, work, reads, writes);
}

void stage_context::copy(std::string_view dst, std::string_view src) {
  session_.copy(stage_, buffer(dst), buffer(src));
}

void stage_context::publish(std::string_view signal) { session_.publish(stage_, slot_, batch_, signal); }
void stage_context::wait_for(std::string_view signal) { session_.wait_for(stage_, batch_, signal); }
void stage_context::all_reduce(collectives::communicator& comm, std::string_view signal, std::string_view buffer,
                               std::size_t offset, std::size_t bytes, const collectives::collective_label& label) {
  session_.all_reduce(stage_, slot_, batch_, comm, signal, buffer, detail::byte_range{offset, bytes}, label);
}

void stage_context::synchronize() { session_.synchronize(stage_); }

}  // namespace streamsafe::pipeline
