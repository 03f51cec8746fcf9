#include "loop_ops.hpp"

namespace streamsafe::demo {

void* loop_ops::allocate(std::size_t bytes, StreamRef stream, streamsafe::source_location where) {
  return tracked_ != nullptr ? tracked_->allocate(bytes, stream, where) : plain_->allocate(bytes, stream);
}

void loop_ops::deallocate(void* ptr, streamsafe::source_location where) {
  if (tracked_ != nullptr) {
    tracked_->deallocate(ptr, where);
  } else {
    plain_->deallocate(ptr);
  }
}

void loop_ops::record_stream(void* ptr, StreamRef stream, streamsafe::source_location where) {
  if (tracked_ != nullptr) {
    tracked_->record_stream(ptr, stream, where);
  } else {
    plain_->record_stream(ptr, stream);
  }
}

void loop_ops::launch(StreamRef stream, const kernel& work, std::initializer_list<memory_range> reads,
                      std::initializer_list<memory_range> writes, streamsafe::source_location where) {
  if (hazards_ == nullptr) {
    stream.launch(work);
    return;
  }
  hazard::tracked_op op = hazards_->on(stream, where);
  for (const memory_range& r : reads) op.reads(r.data, r.bytes);
  for (const memory_range& w : writes) op.writes(w.data, w.bytes);
  op.launch(work);
}

void loop_ops::copy(StreamRef stream, void* dst, const void* src, std::size_t bytes, streamsafe::source_location where) {
  if (hazards_ == nullptr) {
    stream.copy(dst, src, bytes);
  } else {
    hazards_->on(stream, where).copy(dst, src, bytes);
  }
}

void loop_ops::host_writes(const void* ptr, std::size_t bytes, streamsafe::source_location where) {
  if (hazards_ != nullptr) hazards_->host_writes(ptr, bytes, where);
}

}  // namespace streamsafe::demo
