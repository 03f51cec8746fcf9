// Finds the period of a workload that repeats its allocations (a training loop, a replayed batch
// of requests): the allocator's requests are logged as a sequence, windows of it are hashed, and a
// window seen before proposes a period, which the requests that follow must confirm one by one.
// Then it names the point of the period with the least memory live: a plan for the period starts
// there (iteration_plan.hpp). A loop that began where the log did can be offered sooner: once
// every block it allocated is free again, the requests that follow are compared with the log's
// own from its start, and while they match, its first turn may be beginning again.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/huge_page_array.hpp"
#include "streamsafe/stream.hpp"

namespace streamsafe::detail {

enum class request_kind : std::uint8_t { alloc, free };

/// Sentinel distance: the free of a block allocated before the log began.
inline constexpr std::uint64_t unknown_distance = ~std::uint64_t{0};

/// One request as the allocator saw it. A free names its block by how many requests ago the
/// block was allocated, so the same loop gives the same requests in every iteration.
struct request {
  request_kind kind = request_kind::alloc;
  std::size_t bytes = 0;  // rounded; allocs only
  stream_id stream{};     // allocs only
  std::uint64_t distance = 0;  // frees only
  friend bool operator==(const request&, const request&) = default;
};

/// One period of the workload, starting at its point of least live memory.
struct repeating_period {
  std::vector<request> requests;
  /// For each request that is an allocation: how many requests later its free comes (its
  /// lifetime), or 0 when not known or not shorter than the period (such blocks are not planned).
  std::vector<std::uint64_t> lifetimes;
  /// For each request with a lifetime: the address its block had in the instance the lifetime
  /// was seen in (0 when its free named none), so a period the pools served can be planned where
  /// they placed it.
  std::vector<std::uintptr_t> addresses;
  std::uint64_t device_calls = 0;  // made during the last period seen
  std::uint64_t first_sequence = 0;  // the sequence number of requests[0] in the next period
  /// Taken at its first sighting, unconfirmed: the turn cut ended before the latest request, so
  /// the period being served began already (its first requests went to the pools).
  bool unconfirmed = false;
  /// Unconfirmed: the allocator's device calls when the turn being served began (its first
  /// requests went to the pools, which may have called the device for them again).
  std::uint64_t device_calls_at_turn_start = 0;
};

/// Not thread-safe: the caller serializes (a workload that interleaves threads does not repeat).
class repeat_detector {
 public:
  static constexpr std::size_t hashed_window = 32;  // requests hashed together, to find a period

  /// Keeps at most `capacity` requests (24 bytes each): a period of up to a third of it is found.
  explicit repeat_detector(std::size_t capacity = std::size_t{1} << 20);

  /// Logs request number `sequence` (the caller numbers every request from 1, one by one; a gap
  /// starts the log over): an allocation of `bytes` (rounded) on `stream`. `device_calls`: the
  /// allocator's device calls so far.
  void note_alloc(std::uint64_t sequence, std::size_t bytes, stream_id stream, std::uint64_t device_calls);
  /// Logs request number `sequence`: the free of the block at `address` allocated by request
  /// `allocated_by` (0: one the caller did not number).
  void note_free(std::uint64_t sequence, std::uint64_t allocated_by, std::uint64_t device_calls,
                 std::uintptr_t address = 0);

  /// After a note: the period, when the request just logged ends one at its point of least live
  /// memory and the period has been confirmed; once. The caller then either takes it (and starts
  /// the detector over) or, when the next request is not the period's first, rejects it.
  [[nodiscard]] std::optional<repeating_period> take_period();
  /// Right after a proposal whose period is the log's first turn, when that turn freed all it
  /// allocated: the period cut at that turn's end, which passed already (the requests since were
  /// checked against the turn; the next one is the period's `sequence + 1 - first_sequence`-th),
  /// before the rest of the period confirmed it; once per proposal. Taking it does not stop the
  /// confirmation: drop_period() does.
  [[nodiscard]] std::optional<repeating_period> take_unconfirmed_period();
  /// Before request `next` is logged: where the log's first turn began again, when the requests
  /// logged since its live bytes last came back to where they were at its start equal the log's
  /// first ones, as `next` does the one after them (a loop that began where the log did, come
  /// round again before a window of it could be seen again); 0 when they do not, while a period
  /// is being confirmed, when the turn is too short to be proposed, or when another turn of this
  /// log was taken already (a workload whose turns only begin alike is offered one, not each; so
  /// is one whose log returns to its start's live bytes inside the first turn and goes on as the
  /// log began for a request or two: a turn that ends as it begins is taken that early, derails,
  /// and is found by its windows in the next turn).
  [[nodiscard]] std::uint64_t turn_again_at(const request& next) const noexcept;
  /// The length of the turn turn_again_at may give next (the log's first turn, come round again
  /// as far as the requests logged since tell), 0 when none.
  [[nodiscard]] std::uint64_t turn_again_length() const noexcept;
  /// The log's first turn, up to `from` (what turn_again_at gave), as an unconfirmed period; the
  /// confirmation of a proposal is not started.
  [[nodiscard]] repeating_period take_turn_again(std::uint64_t from);
  /// The period last taken was not one (the repetition ended where it seemed to begin again, as
  /// a run of identical layers does): its length is not proposed again until restart.
  void reject();
  /// The period last taken is being served (or was, and its requests are logged again): the
  /// requests that follow are not checked against it, and the next sighting may propose another.
  void drop_period();
  /// A plan of a period of `length` derailed before it came round once: that length is not
  /// proposed again, restart or not (a stretch repeating inside a longer period, taken for it).
  void forbid(std::uint64_t length);
  /// The period last taken is not served, and its length is not proposed again until restart
  /// (a stretch inside a longer loop, set aside so the log goes on).
  void set_aside(std::uint64_t length) { rejected_.push_back(length); }

  /// Forgets everything (the workload changed, or threads interleave); the log starts again at
  /// the next request noted.
  void restart();
  /// The length of the period being confirmed, 0 when none: a period of it may be taken once
  /// the log has come round it again.
  [[nodiscard]] std::uint64_t proposed_length() const noexcept { return period_; }
  /// Whether the log is young enough that a period beginning at its first request can still be
  /// found (it holds less than the longest period the log can find).
  [[nodiscard]] bool from_start_findable() const noexcept { return next_ != 0 && (next_ - first_) * 3 < capacity_; }
  /// Whether a period beginning at the log's first request may still be proposed or confirmed:
  /// the log is young enough to propose one, or a proposal is being confirmed.
  [[nodiscard]] bool may_find_from_start() const noexcept {
    return next_ != 0 && ((next_ - first_) * 3 < capacity_ + 3 * hashed_window || period_ != 0);
  }
  /// The sequence number of the log's first request (0: nothing logged).
  [[nodiscard]] std::uint64_t log_start() const noexcept { return next_ == 0 ? 0 : first_; }
  /// Whether request number `sequence` would go on with the log (not start it over).
  [[nodiscard]] bool continues_at(std::uint64_t sequence) const noexcept { return next_ != 0 && sequence == next_; }

 private:
  // Written once per request, so kept small: live bytes and device calls, which only a proposal
  // and a cut read, are kept beside the log (live_bytes_, calls_) or recomputed from it.
  struct logged {
    // Allocs: the block's address, once its free named it. Frees: the bytes freed (0: a block
    // not logged), so live bytes are recomputed from the log alone, in its order.
    std::uint64_t other = 0;
    std::uint64_t value = 0;        // bytes of an alloc, distance of a free
    std::uint32_t freed_after = 0;  // allocs: distance to their free once seen (0: not yet, or too far)
    std::uint16_t stream = 0;       // allocs: index in streams_
    request_kind kind = request_kind::alloc;
    [[nodiscard]] bool same(const logged& other) const noexcept {
      return value == other.value && kind == other.kind && stream == other.stream;
    }
  };
  [[nodiscard]] std::uint16_t stream_index(stream_id stream);
  [[nodiscard]] request request_of(const logged& entry) const;
  void append(std::uint64_t sequence, const request& r, std::int64_t live_delta, std::uint64_t device_calls);
  void look_for_period(std::uint64_t latest);
  struct sighting;
  /// Proposes the period from the window seen at `seen_then` to the one ending at `latest`, if
  /// it may be one; `first_turn`: the window is the log's first, so the period is its first turn.
  void consider(std::uint64_t latest, const sighting& seen_then, bool first_turn);
  /// How request `sequence` changed the live bytes of logged blocks.
  [[nodiscard]] std::int64_t live_delta(std::uint64_t sequence) const;
  /// The request in [first, last] after which the fewest bytes were live (the first such), given
  /// that `live_after_last` were live after `last`.
  [[nodiscard]] std::uint64_t least_live(std::uint64_t first, std::uint64_t last, std::int64_t live_after_last) const;
  /// The allocator's device calls when request `sequence` was logged.
  [[nodiscard]] std::uint64_t calls_at(std::uint64_t sequence) const;
  void propose(std::uint64_t latest, std::uint64_t period, bool first_turn);
  void confirm(std::uint64_t latest);
  [[nodiscard]] logged& at(std::uint64_t sequence) { return log_[sequence - first_]; }
  [[nodiscard]] const logged& at(std::uint64_t sequence) const { return log_[sequence - first_]; }
  [[nodiscard]] bool logged_here(std::uint64_t sequence) const noexcept {
    return sequence >= first_ && sequence < next_;
  }
  /// The period of requests (last - length, last], each alloc's lifetime from its own instance
  /// or the one `other` requests later (a period before or after).
  [[nodiscard]] repeating_period cut_period(std::uint64_t last, std::uint64_t length, std::int64_t other) const;
  /// cut_period of a turn of `length` that freed every block it allocated and ended at
  /// `turn_end`, unconfirmed.
  [[nodiscard]] repeating_period cut_unconfirmed(std::uint64_t turn_end, std::uint64_t length) const;
  /// Keeps turn_again_ up to date with request `latest`, just logged.
  void follow_turn_again(std::uint64_t latest);
  [[nodiscard]] bool may_propose(std::uint64_t period) const;
  /// The instance of the alloc at `sequence`, or of the one `other` requests later, whose free
  /// came within `length` requests (0: neither's did).
  [[nodiscard]] std::uint64_t instance_with_lifetime(std::uint64_t sequence, std::uint64_t length,
                                                     std::int64_t other) const;

  std::size_t capacity_;
  huge_page_array<logged> log_;
  std::uint64_t first_ = 0;  // sequence number of log_[0]
  std::uint64_t next_ = 0;   // expected next; 0 before the first
  std::uint64_t window_hash_ = 0;
  std::array<std::uint64_t, hashed_window> window_keys_{};  // the keys of the window's requests, a ring
  struct sighting {
    std::uint64_t at = 0;          // the request ending the window
    std::int64_t live_bytes = 0;   // live bytes of logged blocks then
  };
  std::unordered_map<std::uint64_t, sighting> windows_;  // sampled window hash -> its last sighting
  std::pair<std::uint64_t, sighting> first_window_{0, sighting{}};  // the log's first window: hash, sighting
  std::int64_t live_bytes_ = 0;  // live bytes of logged blocks after the last request
  // (first request, device calls from it on), appended when the allocator's count moved.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> calls_;
  std::vector<stream_id> streams_;  // the streams of logged allocations
  std::uint16_t last_stream_ = 0;   // index in streams_ of the last one looked up
  // The period being confirmed: 0 when none.
  std::uint64_t period_ = 0;
  std::uint64_t confirmed_from_ = 0;  // first request checked against the one a period before
  std::uint64_t start_at_ = 0;        // the period is cut when this request is logged
  bool ready_ = false;
  std::uint64_t unconfirmed_at_ = 0;  // the cut a proposal passed already (0: none to take)
  std::vector<std::uint64_t> rejected_;  // period lengths that ended at their own start
  std::vector<std::uint64_t> forbidden_;  // period lengths whose plans derailed at once
  // The first request after the log's live bytes last came back to their level at its start,
  // while every request since has equalled the log's own from its start (0: none).
  std::uint64_t turn_again_ = 0;
  std::uint64_t turn_taken_ = 0;  // the turn take_turn_again gave in this log (0: none)
};

}  // namespace streamsafe::detail
