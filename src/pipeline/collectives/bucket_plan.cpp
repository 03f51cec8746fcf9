#include "streamsafe/pipeline/collectives/bucket_plan.hpp"

#include <utility>

#include "common/expects.hpp"

namespace streamsafe::collectives {

namespace {

constexpr std::size_t bucket_alignment = 256;  // keeps each bucket's collective on aligned memory

std::size_t align_up(std::size_t value) { return (value + bucket_alignment - 1) / bucket_alignment * bucket_alignment; }

void check_gradient(const gradient& g, std::size_t index) {
  SS_EXPECTS(g.bytes > 0 && g.bytes % sizeof(float) == 0, "bucket_plan: gradient ", index, " '", g.name, "' has ",
             g.bytes, " bytes, not a positive whole number of float32 elements");
}

std::string bucket_name(std::uint32_t id, std::span<const gradient> gradients, const std::vector<std::size_t>& members) {
  std::string name = "bucket " + std::to_string(id) + " [" + gradients[members.front()].name;
  if (members.size() > 1) name += ".." + gradients[members.back()].name;
  return name + "]";
}

}  // namespace

bucket_plan::bucket_plan(std::span<const gradient> gradients, std::size_t cap_bytes)
    : bucket_index_(gradients.size()), offsets_(gradients.size()), cap_bytes_(cap_bytes) {
  SS_EXPECTS(!gradients.empty(), "bucket_plan: no gradients");
  SS_EXPECTS(cap_bytes > 0, "bucket_plan: the bucket cap is 0 bytes");
  for (std::size_t i = gradients.size(); i-- > 0;) {  // production order: reverse parameter order
    check_gradient(gradients[i], i);
    if (buckets_.empty() || buckets_.back().bytes + gradients[i].bytes > cap_bytes) {
      const std::size_t offset = buckets_.empty() ? 0 : align_up(buckets_.back().offset + buckets_.back().bytes);
      bucket next;
      next.id = static_cast<std::uint32_t>(buckets_.size());
      next.offset = offset;
      buckets_.push_back(std::move(next));
    }
    bucket& current = buckets_.back();
    offsets_[i] = current.offset + current.bytes;
    bucket_index_[i] = buckets_.size() - 1;
    current.gradients.push_back(i);
    current.bytes += gradients[i].bytes;
  }
  for (auto& b : buckets_) b.name = bucket_name(b.id, gradients, b.gradients);
  total_bytes_ = buckets_.back().offset + buckets_.back().bytes;
}

const bucket& bucket_plan::bucket_of(std::size_t index) const { return buckets_.at(bucket_index_.at(index)); }

}  // namespace streamsafe::collectives
