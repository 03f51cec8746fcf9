#include "alloc/offset_planner.hpp"

#include <algorithm>
#include <exception>
#include <limits>
#include <map>
#include <memory_resource>
#include <numeric>
#include <thread>
#include <utility>

#include "common/expects.hpp"

namespace streamsafe::detail {

namespace {

bool overlap_linear(std::uint64_t a0, std::uint64_t a1, std::uint64_t b0, std::uint64_t b1) noexcept {
  return a0 < b1 && b0 < a1;
}

struct placed_range {
  std::size_t offset;
  std::size_t end;
};

/// The lowest offset at or above 0 where `bytes` fit between `taken` (sorted here by offset)
/// without straddling one of `walls` (ascending). Walls are empty ranges, read in step with the
/// taken ones rather than sorted in with them: a plan over many ranges would sort them again for
/// every block.
std::size_t lowest_gap(std::pmr::vector<placed_range>& taken, std::span<const std::size_t> walls, std::size_t bytes) {
  std::sort(taken.begin(), taken.end(), [](const placed_range& a, const placed_range& b) { return a.offset < b.offset; });
  std::size_t candidate = 0;
  auto wall = walls.begin();
  // Whether the gap at the candidate closes below `offset`; else each wall below it moves the
  // candidate up to it.
  const auto fits_below = [&](std::size_t offset) {
    for (; wall != walls.end() && *wall < offset; ++wall) {
      if (*wall >= candidate + bytes) return true;
      candidate = std::max(candidate, *wall);
    }
    return false;
  };
  for (const placed_range& p : taken) {
    if (fits_below(p.offset) || p.offset >= candidate + bytes) return candidate;
    candidate = std::max(candidate, p.end);
  }
  fits_below(std::numeric_limits<std::size_t>::max());
  return candidate;
}

}  // namespace

namespace {

/// Whether [a0, a1) and [b0, b1), each on the period's circle (a lifetime may run past its end),
/// share a point.
bool overlap_cyclic(std::uint64_t a0, std::uint64_t a1, std::uint64_t b0, std::uint64_t b1, std::uint64_t period) noexcept {
  return overlap_linear(a0, a1, b0, b1) || overlap_linear(a0, a1, b0 + period, b1 + period) ||
         overlap_linear(a0 + period, a1 + period, b0, b1);
}

}  // namespace

bool overlap_in_time(const cyclic_lifetime& a, const cyclic_lifetime& b, std::uint64_t period) noexcept {
  return overlap_cyclic(a.start, a.start + a.length, b.start, b.start + b.length, period);
}

namespace {

void expect_within(const cyclic_lifetime& b, std::uint64_t period, const char* call) {
  SS_EXPECTS(b.start < period && b.length <= period, call, ": a lifetime from ", b.start, " for ", b.length,
             " requests does not fit a period of ", period);
}

/// The turn-0 and turn-1 instance of every lifetime (each at least one request long), in the
/// order they begin: a counting sort over the two turns' requests, so no comparison sort.
struct lifetime_instance {
  std::uint64_t begin;
  std::uint64_t end;
  std::uint32_t block;
  bool second_turn;
};

std::pmr::vector<lifetime_instance> instances_by_begin(std::span<const cyclic_lifetime> blocks, std::uint64_t period,
                                                      std::pmr::memory_resource* scratch) {
  std::pmr::vector<std::uint32_t> first_at(2 * period + 1, 0, scratch);  // then: where instances beginning at t go
  for (const cyclic_lifetime& b : blocks) {
    ++first_at[b.start + 1];
    ++first_at[b.start + period + 1];
  }
  std::partial_sum(first_at.begin(), first_at.end(), first_at.begin());
  std::pmr::vector<lifetime_instance> out(2 * blocks.size(), scratch);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const std::uint64_t length = std::max<std::uint64_t>(blocks[i].length, 1);
    for (const std::uint64_t turn : {std::uint64_t{0}, period}) {
      const std::uint64_t begin = blocks[i].start + turn;
      out[first_at[begin]++] = {begin, begin + length, static_cast<std::uint32_t>(i), turn != 0};
    }
  }
  return out;
}

/// For each block, the blocks whose lifetimes overlap its own, listed side by side (block i's
/// are list[first[i], first[i + 1])). A pair may be listed twice, which placing ignores.
struct conflict_lists {
  std::pmr::vector<std::size_t> first;
  std::pmr::vector<std::uint32_t> list;
};

/// conflict_lists as placing reads them.
struct conflict_view {
  std::span<const std::size_t> first;
  std::span<const std::uint32_t> list;
  [[nodiscard]] std::span<const std::uint32_t> of(std::uint32_t block) const {
    return {list.data() + first[block], list.data() + first[block + 1]};
  }
};

/// Calls meet(a, b) for every pair of blocks whose lifetimes overlap, once or twice each. One
/// sweep over two turns of the period meets every such pair at a moment when an instance of one
/// begins in the second turn while one of the other is alive: a pair alive together within a
/// turn meets so (the later of the two begins in the second turn while the other's second
/// instance lives), and a lifetime running past the period's end meets the second turn's
/// beginnings from the first. Meetings at first-turn beginnings add nothing, so they are not
/// reported. Instances leave the alive set at their ends, found by request: O(n + period) plus
/// the number of meetings.
class overlap_sweep {
 public:
  overlap_sweep(std::span<const cyclic_lifetime> blocks, std::uint64_t period, std::pmr::memory_resource* scratch)
      : by_begin_(instances_by_begin(blocks, period, scratch)),
        ending_from_(3 * period + 2, 0, scratch),
        ending_(by_begin_.size(), scratch) {
    for (const lifetime_instance& i : by_begin_) ++ending_from_[i.end + 1];
    std::partial_sum(ending_from_.begin(), ending_from_.end(), ending_from_.begin());
    std::pmr::vector<std::uint32_t> fill(ending_from_.begin(), ending_from_.end() - 1, scratch);
    for (std::uint32_t k = 0; k < by_begin_.size(); ++k) ending_[fill[by_begin_[k].end]++] = k;
  }

  /// How many meetings run() reports that involve each block (a pair met twice counts twice),
  /// added into counts[block + 1], from the instances' begins and ends alone: O(n + period),
  /// without the sweep. An instance k (in begin order) of the second turn meets every instance
  /// alive then: the k before it less those ended by its begin. An instance j is met by every
  /// second-turn instance after it in that order that begins before j ends. A block never meets
  /// itself: its two instances do not live together (a lifetime is at most a period).
  void count_meetings(std::span<std::size_t> counts) const {
    std::pmr::memory_resource* scratch = by_begin_.get_allocator().resource();
    // second_begins_before[t]: second-turn instances beginning before request t.
    std::pmr::vector<std::uint32_t> second_begins_before(ending_from_.size(), 0, scratch);
    for (const lifetime_instance& i : by_begin_) {
      if (i.second_turn) ++second_begins_before[i.begin + 1];
    }
    std::partial_sum(second_begins_before.begin(), second_begins_before.end(), second_begins_before.begin());
    std::size_t second_so_far = 0;  // second-turn instances at or before k in begin order
    for (std::size_t k = 0; k < by_begin_.size(); ++k) {
      const lifetime_instance& i = by_begin_[k];
      if (i.second_turn) {
        counts[i.block + 1] += k - ending_from_[i.begin + 1];  // alive when it begins
        ++second_so_far;
      }
      counts[i.block + 1] += second_begins_before[i.end] - second_so_far;
    }
  }

  template <typename Meet>
  void run(Meet&& meet) const {
    std::pmr::memory_resource* scratch = by_begin_.get_allocator().resource();
    std::pmr::vector<std::uint32_t> alive(scratch);           // blocks of the instances alive, in any order
    std::pmr::vector<std::uint32_t> alive_instance(scratch);  // beside `alive`: whose place it is
    std::pmr::vector<std::uint32_t> alive_at(by_begin_.size(), scratch);  // an instance's place in `alive`
    std::uint64_t swept_to = 0;  // instances ending before it have left
    for (std::uint32_t k = 0; k < by_begin_.size(); ++k) {
      const lifetime_instance& next = by_begin_[k];
      for (; swept_to <= next.begin; ++swept_to) {
        for (std::uint32_t e = ending_from_[swept_to]; e < ending_from_[swept_to + 1]; ++e) {
          const std::uint32_t place = alive_at[ending_[e]];
          alive[place] = alive.back();
          alive_instance[place] = alive_instance.back();
          alive_at[alive_instance[place]] = place;
          alive.pop_back();
          alive_instance.pop_back();
        }
      }
      if (next.second_turn) {
        for (const std::uint32_t a : alive) {
          if (a != next.block) meet(a, next.block);
        }
      }
      alive_at[k] = static_cast<std::uint32_t>(alive.size());
      alive.push_back(next.block);
      alive_instance.push_back(k);
    }
  }

 private:
  std::pmr::vector<lifetime_instance> by_begin_;
  std::pmr::vector<std::uint32_t> ending_from_;  // instances ending at t: ending_[ending_from_[t], ending_from_[t + 1])
  std::pmr::vector<std::uint32_t> ending_;
};

/// Each block's meetings counted from the lifetimes' ends, then listed in place by one sweep:
/// no buffer of pairs, whose pages cost more than the sweep, and no second sweep to count them.
conflict_lists time_conflicts(std::span<const cyclic_lifetime> blocks, std::uint64_t period,
                              std::pmr::memory_resource* scratch) {
  const overlap_sweep sweep(blocks, period, scratch);
  conflict_lists out{std::pmr::vector<std::size_t>(blocks.size() + 1, 0, scratch), std::pmr::vector<std::uint32_t>(scratch)};
  sweep.count_meetings(out.first);
  std::partial_sum(out.first.begin(), out.first.end(), out.first.begin());
  out.list.resize(out.first.back());
  std::pmr::vector<std::size_t> fill(out.first.begin(), out.first.end() - 1, scratch);
  sweep.run([&](std::uint32_t a, std::uint32_t b) {
    out.list[fill[a]++] = b;
    out.list[fill[b]++] = a;
  });
  // A count off by one would shift every later block's list: the lists end where counted.
  SS_EXPECTS(std::equal(fill.begin(), fill.end(), out.first.begin() + 1), "time_conflicts: the meetings listed differ ",
             "from those counted for ", blocks.size(), " blocks over a period of ", period);
  return out;
}

/// About how many pairs of `blocks` live together (each meeting once per turn of the period):
/// from the starts and ends alone, counted over the two turns' requests, without listing pairs.
std::size_t overlapping_pairs(std::span<const cyclic_lifetime> blocks, std::uint64_t period,
                              std::pmr::memory_resource* scratch) {
  std::pmr::vector<std::uint32_t> begins(2 * period, 0, scratch);
  std::pmr::vector<std::uint32_t> ends(3 * period + 1, 0, scratch);
  for (const cyclic_lifetime& b : blocks) {
    expect_within(b, period, "plan_offsets");
    const std::uint64_t length = std::max<std::uint64_t>(b.length, 1);
    for (const std::uint64_t turn : {std::uint64_t{0}, period}) {
      ++begins[b.start + turn];
      ++ends[b.start + turn + length];
    }
  }
  std::size_t pairs = 0;
  std::size_t alive = 0;
  for (std::uint64_t t = 0; t < 2 * period; ++t) {
    alive -= ends[t];
    const std::size_t k = begins[t];
    pairs += k * alive + k * (k - 1) / 2;  // each begun before it and not yet ended, as in a sweep
    alive += k;
  }
  return pairs;
}

/// Places blocks in `order` one by one. Sparse lifetimes (few blocks live together): each block
/// sorts the placed blocks it conflicts with (`conflicts`, listed by one sweep). Dense ones (a
/// training step's activations, most alive together): each scans one list of all placed blocks
/// kept in offset order, skipping those whose lifetimes miss its own, where listing the pairs
/// and sorting each block's every time cost n^2 log n and most of a plan's time.
class block_placer {
 public:
  block_placer(std::span<const cyclic_lifetime> blocks, std::uint64_t period, std::span<const std::size_t> boundaries,
               bool dense, conflict_view conflicts, std::pmr::memory_resource* scratch)
      : blocks_(blocks),
        period_(period),
        boundaries_(boundaries),
        dense_(dense),
        conflicts_(conflicts),
        offsets_(blocks.size(), 0, scratch),
        placed_(scratch),
        taken_(scratch),
        by_offset_(scratch) {
    if (!dense_) placed_.assign(blocks.size(), placed_range{0, 0});
  }

  /// Places block i; returns its offset.
  std::size_t place(std::uint32_t i) {
    offsets_[i] = dense_ ? lowest_gap_dense(i) : lowest_gap_sparse(i);
    footprint_ = std::max(footprint_, offsets_[i] + blocks_[i].bytes);
    if (!dense_) {
      placed_[i] = {offsets_[i], offsets_[i] + blocks_[i].bytes};
    } else {
      const placed_block entry{offsets_[i], offsets_[i] + blocks_[i].bytes, blocks_[i].start,
                               blocks_[i].start + blocks_[i].length};
      const auto at = std::upper_bound(by_offset_.begin(), by_offset_.end(), entry.offset,
                                       [](std::size_t offset, const placed_block& p) { return offset < p.offset; });
      by_offset_.insert(at, entry);
    }
    return offsets_[i];
  }

  /// The plan, its offsets copied out of the scratch (a plan that was stopped has none: a check
  /// that refuses it early never pays for a period's worth of fresh pages).
  [[nodiscard]] offset_plan result(bool whole) const {
    return {whole ? std::vector<std::size_t>(offsets_.begin(), offsets_.end()) : std::vector<std::size_t>{}, footprint_};
  }

 private:
  [[nodiscard]] std::size_t lowest_gap_sparse(std::uint32_t i) {
    taken_.clear();
    for (const std::uint32_t j : conflicts_.of(i)) {
      if (placed_[j].end != 0) taken_.push_back(placed_[j]);
    }
    return lowest_gap(taken_, boundaries_, blocks_[i].bytes);
  }

  [[nodiscard]] std::size_t lowest_gap_dense(std::uint32_t i) {
    const std::size_t bytes = blocks_[i].bytes;
    const std::uint64_t start = blocks_[i].start;
    const std::uint64_t stop = start + blocks_[i].length;
    std::size_t candidate = 0;
    auto wall = boundaries_.begin();
    // Walls are empty ranges: one inside [candidate, candidate + bytes) moves the candidate to it.
    const auto fits_before = [&](std::size_t offset, std::size_t end) {
      if (offset >= candidate + bytes) return true;
      candidate = std::max(candidate, end);
      return false;
    };
    const auto walls_fit_below = [&](std::size_t offset) {
      for (; wall != boundaries_.end() && *wall < offset; ++wall) {
        if (fits_before(*wall, *wall)) return true;
      }
      return false;
    };
    for (const placed_block& p : by_offset_) {
      if (p.offset >= candidate + bytes) {
        // This block and every later one lie above the gap, whenever they live. Only a wall
        // below this block can still move the candidate up, into this block's way.
        if (walls_fit_below(p.offset)) return candidate;
        if (p.offset >= candidate + bytes) return candidate;
      }
      if (!overlap_cyclic(start, stop, p.start, p.stop, period_)) continue;
      if (walls_fit_below(p.offset) || fits_before(p.offset, p.end)) return candidate;
    }
    walls_fit_below(std::numeric_limits<std::size_t>::max());
    return candidate;
  }

  /// A placed block as the dense scan reads it: its bytes and its lifetime, side by side.
  struct placed_block {
    std::size_t offset;
    std::size_t end;
    std::uint64_t start;
    std::uint64_t stop;
  };

  std::span<const cyclic_lifetime> blocks_;
  std::uint64_t period_;
  std::span<const std::size_t> boundaries_;
  bool dense_ = false;
  conflict_view conflicts_;  // sparse only
  std::pmr::vector<std::size_t> offsets_;  // by block, in the scratch
  std::size_t footprint_ = 0;
  std::pmr::vector<placed_range> placed_;  // sparse: each block's bytes once placed (an empty range before),
                                           // read together so a conflict costs one look-up
  std::pmr::vector<placed_range> taken_;
  std::pmr::vector<placed_block> by_offset_;  // dense: placed blocks in offset order
};

}  // namespace

offset_planner::offset_planner(std::span<const cyclic_lifetime> blocks, std::uint64_t period,
                               std::pmr::memory_resource* scratch)
    : blocks_(blocks),
      period_(period),
      scratch_(scratch),
      order_(blocks.size(), scratch),
      conflict_first_(scratch),
      conflict_list_(scratch) {
  std::iota(order_.begin(), order_.end(), std::uint32_t{0});
  const auto sort_order = [this] {
    std::stable_sort(order_.begin(), order_.end(), [this](std::uint32_t x, std::uint32_t y) {
      if (blocks_[x].bytes != blocks_[y].bytes) return blocks_[x].bytes > blocks_[y].bytes;
      return blocks_[x].length > blocks_[y].length;
    });
  };
  // The placing order and the lifetimes' overlaps need nothing of each other: for a period of
  // many blocks, where each takes milliseconds, the order is sorted on a thread of its own while
  // this one sweeps. Joined before the order can be read or freed, an exception included.
  std::thread sorter;
  if (blocks.size() >= sort_on_a_thread_from) {
    try {
      sorter = std::thread(sort_order);
    } catch (const std::exception&) {
      // no thread to be had (or no memory to start one): sorted below
    }
  }
  const struct joined {
    std::thread& thread;
    ~joined() {
      if (thread.joinable()) thread.join();
    }
  } join_sorter{sorter};
  if (!sorter.joinable()) sort_order();
  dense_ = overlapping_pairs(blocks, period, scratch) > 64 * blocks.size();
  if (!dense_) {
    conflict_lists conflicts = time_conflicts(blocks, period, scratch);
    conflict_first_ = std::move(conflicts.first);
    conflict_list_ = std::move(conflicts.list);
  }
}

offset_plan offset_planner::plan(std::span<const std::size_t> boundaries, std::size_t give_up_above) const {
  std::size_t footprint = 0;
  return plan(boundaries, [&](std::size_t, std::size_t end) {
    footprint = std::max(footprint, end);
    return footprint > give_up_above;
  });
}

offset_plan offset_planner::plan(std::span<const std::size_t> boundaries, const placed_check& stop) const {
  block_placer placer(blocks_, period_, boundaries, dense_, conflict_view{conflict_first_, conflict_list_}, scratch_);
  for (const std::uint32_t i : order_) {
    const std::size_t offset = placer.place(i);
    if (stop(offset, offset + blocks_[i].bytes)) return placer.result(false);
  }
  return placer.result(true);
}

offset_plan plan_offsets(std::span<const cyclic_lifetime> blocks, std::uint64_t period,
                         std::span<const std::size_t> boundaries, std::pmr::memory_resource* scratch) {
  return offset_planner(blocks, period, scratch).plan(boundaries);
}

std::size_t peak_live_bytes(std::span<const cyclic_lifetime> blocks, std::uint64_t period,
                            std::pmr::memory_resource* scratch) {
  // Live bytes change only where a lifetime starts or ends: a change per request of the period,
  // and a lifetime that runs past the end is live from the start (its previous turn).
  std::pmr::vector<std::int64_t> change(period + 1, 0, scratch);
  std::int64_t live = 0;
  for (const cyclic_lifetime& b : blocks) {
    const auto bytes = static_cast<std::int64_t>(b.bytes);
    expect_within(b, period, "peak_live_bytes");
    const std::uint64_t end = b.start + b.length;
    change[b.start] += bytes;
    if (end < period) {
      change[end] -= bytes;
    } else {
      change[end - period] -= bytes;
      live += bytes;
    }
  }
  std::int64_t peak = 0;
  for (std::uint64_t t = 0; t < period; ++t) peak = std::max(peak, live += change[t]);
  return static_cast<std::size_t>(peak);
}

bool disjoint_in_use(std::span<const cyclic_lifetime> blocks, std::span<const std::size_t> offsets,
                     std::uint64_t period) {
  // Every instance alive in the second turn began in the first or the second: a sweep over two
  // turns meets every pair of blocks alive together.
  struct change {
    std::uint64_t at;
    bool begins;
    std::size_t block;
    bool operator<(const change& other) const noexcept {
      return at != other.at ? at < other.at : begins < other.begins;  // ends first
    }
  };
  std::vector<change> changes;
  changes.reserve(blocks.size() * 4);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    for (const std::uint64_t turn : {std::uint64_t{0}, period}) {
      changes.push_back({blocks[i].start + turn, true, i});
      changes.push_back({blocks[i].start + blocks[i].length + turn, false, i});
    }
  }
  std::sort(changes.begin(), changes.end());
  // Nodes from one buffer, freed together: the sweep allocates and frees one per lifetime.
  std::pmr::monotonic_buffer_resource nodes;
  std::pmr::map<std::size_t, std::size_t> live(&nodes);  // offset -> end, of the blocks alive now
  for (const change& c : changes) {
    const std::size_t begin = offsets[c.block];
    if (!c.begins) {
      live.erase(begin);
      continue;
    }
    const std::size_t end = begin + blocks[c.block].bytes;
    const auto next = live.lower_bound(begin);
    if (next != live.end() && next->first < end) return false;
    if (next != live.begin() && std::prev(next)->second > begin) return false;
    live.emplace_hint(next, begin, end);
  }
  return true;
}

}  // namespace streamsafe::detail
