#include "streamsafe/pipeline/collectives/collective_sequence.hpp"

#include <sstream>
#include <utility>

#include "pipeline/collectives/fnv1a.hpp"

namespace streamsafe::collectives {

namespace {

// FNV-1a over the fields two ranks must agree on, a byte at a time, lowest first.
std::uint64_t mix(std::uint64_t hash, std::uint64_t value) {
  for (int i = 0; i < 8; ++i) hash = detail::fnv_byte(hash, static_cast<unsigned char>(value >> (8 * i)));
  return hash;
}

const char* kind_name(collective_kind kind) {
  switch (kind) {
    case collective_kind::all_reduce: return "all_reduce";
  }
  return "collective";
}

}  // namespace

void collective_sequence::begin(std::uint64_t step) {
  step_ = step;
  hash_ = mix(detail::fnv_offset, step);
  records_.clear();
}

std::uint64_t collective_sequence::add(collective_record record) {
  hash_ = mix(hash_, static_cast<std::uint64_t>(record.kind));
  hash_ = mix(hash_, record.bucket);
  hash_ = mix(hash_, record.bytes);
  records_.push_back(std::move(record));
  return hash_;
}

std::string collective_sequence::describe() const {
  if (records_.empty()) return "(none)";
  std::ostringstream out;
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const auto& r = records_[i];
    out << (i == 0 ? "" : ", ") << kind_name(r.kind) << " bucket " << r.bucket;
    if (!r.name.empty()) out << " '" << r.name << "'";
    out << ' ' << r.bytes << " B";
  }
  return out.str();
}

std::string describe_mismatch(std::uint64_t step, int rank, const collective_sequence& mine,
                              const collective_sequence& rank0) {
  std::ostringstream out;
  out << "collective order mismatch in step " << step << ": rank " << rank << " issued ["
      << mine.describe() << "] but rank 0 issued [" << rank0.describe() << "]";
  return out.str();
}

}  // namespace streamsafe::collectives
