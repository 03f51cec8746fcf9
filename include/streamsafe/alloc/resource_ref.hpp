// A type-erased, non-owning reference to any stream_ordered_resource: what adaptors hold as their
// upstream, so that one adaptor type works over every resource (a caching allocator, an uncached
// resource, another adaptor).
#pragma once

#include <concepts>
#include <cstddef>
#include <type_traits>

#include "streamsafe/alloc/memory_resource.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe {

/// Each call forwards to the referenced resource and guarantees what it does (memory_resource.hpp).
/// Lifetime: the resource must outlive the reference. Copying is cheap (two pointers); the
/// reference is as thread-safe as the resource.
class resource_ref {
 public:
  template <typename R>
    requires(!std::same_as<std::remove_cv_t<R>, resource_ref> && stream_ordered_resource<R>)
  resource_ref(R& resource) noexcept  // NOLINT(google-explicit-constructor): a reference converts
      : resource_(&resource), calls_(&calls_of<R>) {}

  [[nodiscard]] void* allocate(std::size_t bytes, StreamRef stream) const {
    return calls_->allocate(resource_, bytes, stream);
  }
  void deallocate(void* ptr) const { calls_->deallocate(resource_, ptr); }
  void record_stream(void* ptr, StreamRef stream) const { calls_->record_stream(resource_, ptr, stream); }

 private:
  struct calls {
    void* (*allocate)(void* resource, std::size_t bytes, StreamRef stream);
    void (*deallocate)(void* resource, void* ptr);
    void (*record_stream)(void* resource, void* ptr, StreamRef stream);
  };
  template <typename R>
  static constexpr calls calls_of{
      [](void* r, std::size_t bytes, StreamRef stream) -> void* { return static_cast<R*>(r)->allocate(bytes, stream); },
      [](void* r, void* ptr) { static_cast<R*>(r)->deallocate(ptr); },
      [](void* r, void* ptr, StreamRef stream) { static_cast<R*>(r)->record_stream(ptr, stream); },
  };

  void* resource_;
  const calls* calls_;
};

static_assert(stream_ordered_resource<resource_ref>, "resource_ref does not satisfy stream_ordered_resource");

}  // namespace streamsafe
