#include "alloc/repeat_detector.hpp"

#include <algorithm>
#include <utility>

#include "common/expects.hpp"

namespace streamsafe::detail {

namespace {

constexpr std::uint64_t window = repeat_detector::hashed_window;
constexpr std::uint64_t sample_mask = 63;   // about one window in 64 is remembered
constexpr std::uint64_t base = 0x100000001b3ull;

constexpr std::uint64_t power(std::uint64_t b, std::uint64_t e) {
  std::uint64_t r = 1;
  while (e-- != 0) r *= b;
  return r;
}
constexpr std::uint64_t base_to_window = power(base, window);

std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

std::uint64_t key_of(const request& r) noexcept {
  if (r.kind == request_kind::free) return mix(r.distance * 2 + 1);
  return mix(mix(r.bytes * 2) ^ static_cast<std::uint64_t>(r.stream));
}

}  // namespace

repeat_detector::repeat_detector(std::size_t capacity)
    : capacity_(std::max<std::size_t>(capacity, 4 * window)), log_(capacity_) {}

void repeat_detector::note_alloc(std::uint64_t sequence, std::size_t bytes, stream_id stream,
                                 std::uint64_t device_calls) {
  append(sequence, request{request_kind::alloc, bytes, stream, 0}, static_cast<std::int64_t>(bytes), device_calls);
}

std::uint16_t repeat_detector::stream_index(stream_id stream) {
  // Requests come in runs on one stream: the last one found is looked at first.
  if (last_stream_ < streams_.size() && streams_[last_stream_] == stream) return last_stream_;
  const auto found = static_cast<std::size_t>(std::find(streams_.begin(), streams_.end(), stream) - streams_.begin());
  if (found == streams_.size()) streams_.push_back(stream);
  last_stream_ = static_cast<std::uint16_t>(found);
  return last_stream_;
}

request repeat_detector::request_of(const logged& entry) const {
  if (entry.kind == request_kind::free) return request{request_kind::free, 0, stream_id{}, entry.value};
  return request{request_kind::alloc, entry.value, streams_[entry.stream], 0};
}

void repeat_detector::note_free(std::uint64_t sequence, std::uint64_t allocated_by, std::uint64_t device_calls,
                                std::uintptr_t address) {
  std::uint64_t distance = unknown_distance;
  std::int64_t delta = 0;
  if (logged_here(allocated_by) && sequence == next_) {
    logged& alloc = at(allocated_by);
    distance = sequence - allocated_by;
    alloc.freed_after = distance <= UINT32_MAX ? static_cast<std::uint32_t>(distance) : 0;
    alloc.other = address;
    delta = -static_cast<std::int64_t>(alloc.value);
  }
  append(sequence, request{request_kind::free, 0, stream_id{}, distance}, delta, device_calls);
}

void repeat_detector::reject() {
  if (period_ != 0) rejected_.push_back(period_);
  period_ = 0;
  ready_ = false;
  unconfirmed_at_ = 0;
}

void repeat_detector::drop_period() {
  period_ = 0;
  ready_ = false;
  unconfirmed_at_ = 0;
}

void repeat_detector::forbid(std::uint64_t length) {
  if (std::find(forbidden_.begin(), forbidden_.end(), length) == forbidden_.end()) forbidden_.push_back(length);
}

void repeat_detector::restart() {
  rejected_.clear();
  log_.clear();
  windows_.clear();
  first_window_ = {0, sighting{}};
  calls_.clear();
  live_bytes_ = 0;
  streams_.clear();
  window_hash_ = 0;
  period_ = 0;
  ready_ = false;
  next_ = 0;
  turn_again_ = 0;
  turn_taken_ = 0;
}

void repeat_detector::append(std::uint64_t sequence, const request& r, std::int64_t live_delta,
                             std::uint64_t device_calls) {
  if (sequence != next_ || log_.size() >= capacity_ || streams_.size() > UINT16_MAX) {
    restart();
    live_delta = r.kind == request_kind::alloc ? live_delta : 0;
  }
  if (log_.empty()) {
    first_ = sequence;
    live_bytes_ = 0;
  }
  next_ = sequence + 1;
  live_bytes_ += live_delta;
  if (calls_.empty() || calls_.back().second != device_calls) calls_.emplace_back(sequence, device_calls);
  const bool alloc = r.kind == request_kind::alloc;
  const std::uint64_t freed = alloc ? 0 : static_cast<std::uint64_t>(-live_delta);
  log_.push_back(logged{freed, alloc ? r.bytes : r.distance, 0, alloc ? stream_index(r.stream) : std::uint16_t{0}, r.kind});
  // The ring's slot holds the key of the request a window ago, which leaves the window now.
  std::uint64_t& slot = window_keys_[log_.size() % window];
  const std::uint64_t key = key_of(r);
  window_hash_ = window_hash_ * base + key;
  if (log_.size() > window) window_hash_ -= slot * base_to_window;
  slot = key;
  follow_turn_again(sequence);
  if (period_ != 0) confirm(sequence);
  if (log_.size() >= window) look_for_period(sequence);
}

void repeat_detector::look_for_period(std::uint64_t latest) {
  // The log's first window is always remembered: a loop that began where the log did is seen
  // again as soon as its second turn has begun, whatever its windows hash to.
  // Only its first recurrence counts: a later one would propose a multiple of the period.
  if (log_.size() == window) first_window_ = {window_hash_, sighting{latest, live_bytes_}};
  if (window_hash_ == first_window_.first && first_window_.second.at != 0 && latest != first_window_.second.at) {
    const sighting first_seen = std::exchange(first_window_.second, sighting{});
    if (period_ == 0) consider(latest, first_seen, true);
  }
  if ((mix(window_hash_) & sample_mask) != 0) return;
  const auto [it, fresh] = windows_.try_emplace(window_hash_, sighting{latest, live_bytes_});
  if (fresh) return;
  // The next sighting compares with this one, even while a period is confirmed: a stale
  // sighting would propose a multiple of the period.
  const sighting seen_then = std::exchange(it->second, sighting{latest, live_bytes_});
  if (period_ != 0) return;
  consider(latest, seen_then, false);
}

void repeat_detector::consider(std::uint64_t latest, const sighting& seen_then, bool first_turn) {
  const std::uint64_t seen = seen_then.at;
  const std::uint64_t period = latest - seen;
  // A period explains the whole log: its first sighting is within a few periods of the log's
  // start (warm-up requests come first; a stretch that repeats inside a longer period, such as
  // decode steps of one shape, is seen first long after the log began). And it holds whole
  // lifetimes: what it allocates it frees, so live memory is back where it was (layers repeating
  // inside a forward pass keep adding activations; a first pass also allocates the weights).
  if (seen - first_ > 4 * period || !may_propose(period)) return;
  if (live_bytes_ == seen_then.live_bytes) propose(latest, period, first_turn);
}

bool repeat_detector::may_propose(std::uint64_t period) const {
  return period >= 2 * window && std::find(rejected_.begin(), rejected_.end(), period) == rejected_.end() &&
         std::find(forbidden_.begin(), forbidden_.end(), period) == forbidden_.end();
}

void repeat_detector::follow_turn_again(std::uint64_t latest) {
  if (turn_again_ != 0 && !at(latest).same(at(first_ + (latest - turn_again_)))) turn_again_ = 0;
  // A candidate still followed is kept: a later return of live bytes inside it is its own.
  if (turn_again_ == 0 && live_bytes_ == 0 && latest != first_) turn_again_ = latest + 1;
}

std::uint64_t repeat_detector::turn_again_length() const noexcept {
  if (turn_again_ == 0 || period_ != 0 || (turn_taken_ != 0 && turn_taken_ != turn_again_)) return 0;
  const std::uint64_t turn = turn_again_ - first_;
  return next_ - turn_again_ < turn && may_propose(turn) ? turn : 0;
}

std::uint64_t repeat_detector::turn_again_at(const request& next) const noexcept {
  return turn_again_length() != 0 && request_of(at(first_ + (next_ - turn_again_))) == next ? turn_again_ : 0;
}

repeating_period repeat_detector::take_turn_again(std::uint64_t from) {
  SS_EXPECTS(from != 0 && from == turn_again_, "take_turn_again: ", from, " is no turn being followed");
  turn_taken_ = from;
  return cut_unconfirmed(from - 1, from - first_);
}

std::int64_t repeat_detector::live_delta(std::uint64_t sequence) const {
  const logged& entry = at(sequence);
  return entry.kind == request_kind::alloc ? static_cast<std::int64_t>(entry.value) : -static_cast<std::int64_t>(entry.other);
}

std::uint64_t repeat_detector::least_live(std::uint64_t first, std::uint64_t last, std::int64_t live_after_last) const {
  // Backwards from the live bytes known now; `<=` keeps the first of equal minima.
  std::int64_t live = live_after_last;  // after request s
  std::uint64_t least = last;
  std::int64_t least_bytes = live;
  for (std::uint64_t s = last;; --s) {
    if (live <= least_bytes) {
      least = s;
      least_bytes = live;
    }
    if (s == first) return least;
    live -= live_delta(s);
  }
}

std::uint64_t repeat_detector::calls_at(std::uint64_t sequence) const {
  const auto after = std::upper_bound(calls_.begin(), calls_.end(), sequence,
                                      [](std::uint64_t s, const auto& change) { return s < change.first; });
  return after == calls_.begin() ? 0 : std::prev(after)->second;
}

void repeat_detector::propose(std::uint64_t latest, std::uint64_t period, bool first_turn) {
  const std::uint64_t least = least_live(latest + 1 - period, latest, live_bytes_);
  // The period is cut from its point of least live memory on; every request of the cut must
  // equal the one a period before: those logged already are compared now, the rest as they come.
  std::uint64_t start_at = least + period;
  // A period that is the log's first turn (a loop that began where the log did) can be served
  // from that turn's end at once, unconfirmed. The turn freed all it allocated: live bytes were
  // the same at both sightings of the log's first window, and the window's requests change them
  // alike.
  const std::uint64_t unconfirmed_at = first_turn ? first_ + period - 1 : 0;
  while (start_at + 1 < first_ + 2 * period) start_at += period;
  for (std::uint64_t s = start_at + 1 - period; s <= latest; ++s) {
    if (!at(s).same(at(s - period))) return;
  }
  period_ = period;
  start_at_ = start_at;
  unconfirmed_at_ = unconfirmed_at;
}

void repeat_detector::confirm(std::uint64_t latest) {
  if (!at(latest).same(at(latest - period_))) {
    period_ = 0;
    return;
  }
  if (latest == start_at_) ready_ = true;
}

std::uint64_t repeat_detector::instance_with_lifetime(std::uint64_t sequence, std::uint64_t length,
                                                      std::int64_t other) const {
  for (const std::uint64_t instance : {sequence, sequence + static_cast<std::uint64_t>(other)}) {
    if (!logged_here(instance)) continue;
    const std::uint64_t after = at(instance).freed_after;
    if (after != 0 && after < length) return instance;
  }
  return 0;
}

repeating_period repeat_detector::cut_period(std::uint64_t last, std::uint64_t length, std::int64_t other) const {
  repeating_period out;
  const std::uint64_t first = last + 1 - length;
  out.requests.reserve(length);
  out.lifetimes.reserve(length);
  out.addresses.reserve(length);
  for (std::uint64_t s = first; s <= last; ++s) {
    out.requests.push_back(request_of(at(s)));
    const std::uint64_t instance = at(s).kind == request_kind::alloc ? instance_with_lifetime(s, length, other) : 0;
    out.lifetimes.push_back(instance == 0 ? 0 : at(instance).freed_after);
    out.addresses.push_back(instance == 0 ? 0 : at(instance).other);
  }
  out.device_calls = calls_at(last) - calls_at(last - length);
  out.first_sequence = last + 1;
  return out;
}

std::optional<repeating_period> repeat_detector::take_period() {
  if (!ready_) return std::nullopt;
  repeating_period out = cut_period(start_at_, period_, -static_cast<std::int64_t>(period_));
  ready_ = false;
  return out;
}

std::optional<repeating_period> repeat_detector::take_unconfirmed_period() {
  if (period_ == 0 || unconfirmed_at_ == 0) return std::nullopt;
  // The turn freed every block it allocated: each lifetime is its own instance's.
  return cut_unconfirmed(std::exchange(unconfirmed_at_, 0), period_);
}

repeating_period repeat_detector::cut_unconfirmed(std::uint64_t turn_end, std::uint64_t length) const {
  repeating_period out = cut_period(turn_end, length, 0);
  out.unconfirmed = true;
  out.device_calls_at_turn_start = calls_at(turn_end + 1);
  return out;
}

}  // namespace streamsafe::detail
