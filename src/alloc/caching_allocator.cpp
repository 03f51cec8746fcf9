// The public face of the caching allocator: forwards to caching_allocator_impl.
#include "streamsafe/alloc/caching_allocator.hpp"

#include "alloc/caching_allocator_impl.hpp"

namespace streamsafe {

caching_allocator::caching_allocator(const Device& device, allocator_options options)
    : impl_(std::make_unique<detail::caching_allocator_impl>(device, options)) {}
caching_allocator::~caching_allocator() = default;

void* caching_allocator::allocate(std::size_t bytes, StreamRef stream) { return impl_->allocate(bytes, stream); }
void caching_allocator::deallocate(void* ptr) { impl_->deallocate(ptr); }
void caching_allocator::record_stream(void* ptr, StreamRef stream) { impl_->record_stream(ptr, stream); }
void caching_allocator::process_pending_frees() { impl_->process_pending_frees(detail::poll_mode::eager); }
void caching_allocator::empty_cache() { impl_->empty_cache(); }
allocator_stats caching_allocator::stats() const { return impl_->stats(); }
allocator_stats caching_allocator::stats(StreamRef stream) const { return impl_->stats(stream); }
void caching_allocator::reset_peak_stats() { impl_->reset_peak_stats(); }
void caching_allocator::reset_reserved_peak() { impl_->reset_reserved_peak(); }
block_info caching_allocator::block_of(const void* ptr) const { return impl_->block_of(ptr); }
StreamRef caching_allocator::allocation_stream(const void* ptr) const { return impl_->allocation_stream(ptr); }
std::string caching_allocator::snapshot_json() const { return impl_->snapshot_json(); }
std::string caching_allocator::history_csv() const { return impl_->history_csv(); }
const Device& caching_allocator::device() const { return impl_->device(); }
const allocator_options& caching_allocator::options() const { return impl_->options(); }
void caching_allocator::watch_mappings(std::shared_ptr<allocator_observer> watcher) {
  impl_->watch_mappings(std::move(watcher));
}

}  // namespace streamsafe
