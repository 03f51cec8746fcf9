// The shadow state of one byte segment: the last write as one epoch, the reads as one epoch until
// two agents read concurrently (FastTrack), the lifetime state, and the accesses of previous
// lifetimes that a new-lifetime access may still race with.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hazard/epoch.hpp"
#include "streamsafe/hazard/ids.hpp"

namespace streamsafe::hazard::detail {

/// One access as the shadow remembers it: who, when (the agent's own epoch), what and where.
struct access_record {
  agent_slot agent{};
  label_id label{};
  epoch time{};
  std::uint64_t line = 0;
  access_mode mode = access_mode::read;
  friend bool operator==(const access_record&, const access_record&) = default;
};

/// The reads since the last write that no later read is known to follow.
class read_set {
 public:
  /// Adds `read`, dropping the reads it is ordered after (`is_ordered(old)`).
  template <typename IsOrdered>
  void add(const access_record& read, IsOrdered&& is_ordered) {
    if (shared_.empty() && (!only_ || is_ordered(*only_))) {
      only_ = read;  // the common case: still one epoch
      return;
    }
    if (only_) {
      shared_.push_back(*only_);
      only_.reset();
    }
    std::erase_if(shared_, is_ordered);
    shared_.push_back(read);
  }
  void clear() noexcept {
    only_.reset();
    shared_.clear();
  }
  template <typename Fn>
  void for_each(Fn&& fn) const {
    if (only_) fn(*only_);
    for (const auto& read : shared_) fn(read);
  }
  friend bool operator==(const read_set&, const read_set&) = default;

 private:
  std::optional<access_record> only_;
  std::vector<access_record> shared_;
};

enum class lifetime_state : std::uint8_t {
  untracked,  // never allocated: host or foreign memory, simply accessed
  live,       // inside a live allocation
  freed,      // freed and not allocated again: any access is a use-after-free
};

/// The free that ended the previous lifetime of these bytes.
struct free_record {
  label_id label{};
  std::uint64_t line = 0;
  std::uint64_t block = 0;  // first byte of the freed allocation
  friend bool operator==(const free_record&, const free_record&) = default;
};

/// An access of an earlier lifetime that a later access may not be ordered after.
struct retired_access {
  access_record access;
  /// Ordered before the release point of a free that ended its lifetime. The release point
  /// orders the next allocation's stream only, so such an access still races with a
  /// new-lifetime access that is ordered neither after it nor after the allocation.
  bool released = false;
  friend bool operator==(const retired_access&, const retired_access&) = default;
};

struct shadow_cell {
  std::optional<access_record> write;
  read_set reads;
  lifetime_state state = lifetime_state::untracked;
  /// Old-lifetime accesses not yet known to precede every later access: those the host had not
  /// seen finish at the free. Each is checked against new-lifetime accesses as a reuse race.
  std::vector<retired_access> retired;
  /// The allocation that began the live lifetime, as an op of its stream; set only while
  /// `retired` is not empty. An access ordered after it is ordered after every released access.
  std::optional<access_record> allocated;
  free_record freed_by;  // meaningful when state == freed or !retired.empty()
  friend bool operator==(const shadow_cell&, const shadow_cell&) = default;
};

}  // namespace streamsafe::hazard::detail
