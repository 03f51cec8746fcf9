// Gradient buckets: which gradients are all-reduced together, in which order, and where each
// lives in one flat gradient buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace streamsafe::collectives {

/// One gradient tensor, given in parameter order.
struct gradient {
  std::string name;
  std::size_t bytes = 0;
};

/// A run of gradients, contiguous in the flat buffer, reduced by one collective.
struct bucket {
  std::uint32_t id = 0;
  /// Indices into the gradient list (parameter order), in production order.
  std::vector<std::size_t> gradients;
  /// Where the bucket starts in the flat buffer (256-byte aligned) and its length.
  std::size_t offset = 0;
  std::size_t bytes = 0;
  /// "bucket 0 [fc3.bias..fc2.weight]", for the order check and reports.
  std::string name;
};

inline constexpr std::size_t default_bucket_cap = std::size_t{25} << 20;  // as PyTorch DDP

/// Backward produces gradients in reverse parameter order, so buckets follow that order: bucket
/// 0 holds the last parameters, whose gradients are ready first. A bucket takes gradients until
/// the next one would push it past `cap_bytes`; a gradient larger than the cap gets a bucket of
/// its own. Deterministic: the same list and cap give the same plan on every rank.
class bucket_plan {
 public:
  /// Throws usage_error for an empty list, a zero cap, or a gradient of 0 bytes or of a size
  /// that is not a whole number of float32 elements (the all-reduce's element type).
  bucket_plan(std::span<const gradient> gradients, std::size_t cap_bytes = default_bucket_cap);

  [[nodiscard]] const std::vector<bucket>& buckets() const { return buckets_; }
  /// The bucket holding gradient `index` (parameter order) and the gradient's byte offset in
  /// the flat buffer.
  [[nodiscard]] const bucket& bucket_of(std::size_t index) const;
  [[nodiscard]] std::size_t offset_of(std::size_t index) const { return offsets_.at(index); }
  /// Bytes of the flat buffer holding every bucket.
  [[nodiscard]] std::size_t total_bytes() const { return total_bytes_; }
  [[nodiscard]] std::size_t cap_bytes() const { return cap_bytes_; }

 private:
  std::vector<bucket> buckets_;
  std::vector<std::size_t> bucket_index_;  // per gradient
  std::vector<std::size_t> offsets_;       // per gradient
  std::size_t total_bytes_ = 0;
  std::size_t cap_bytes_;
};

}  // namespace streamsafe::collectives
