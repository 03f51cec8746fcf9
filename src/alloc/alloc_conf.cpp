// STREAMSAFE_ALLOC_CONF: "key:value,key:value" over allocator_options (docs/allocator.md).
#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>

#include "common/expects.hpp"
#include "streamsafe/alloc/allocator_options.hpp"

namespace streamsafe {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

std::size_t parse_size(std::string_view key, std::string_view value) {
  std::size_t number = 0;
  const auto [rest, error] = std::from_chars(value.data(), value.data() + value.size(), number);
  SS_EXPECTS(error == std::errc{} && rest != value.data(), "STREAMSAFE_ALLOC_CONF: ", key, ": '", value,
             "' is not a size (a number, optionally followed by KiB, MiB or GiB)");
  const std::string_view suffix = trim(std::string_view(rest, static_cast<std::size_t>(value.data() + value.size() - rest)));
  if (suffix.empty()) return number;
  if (suffix == "KiB") return number << 10;
  if (suffix == "MiB") return number << 20;
  if (suffix == "GiB") return number << 30;
  SS_EXPECTS(false, "STREAMSAFE_ALLOC_CONF: ", key, ": unknown size suffix '", suffix, "' (KiB, MiB or GiB)");
  return 0;
}

template <typename Enum>
Enum parse_choice(std::string_view key, std::string_view value,
                  std::initializer_list<std::pair<std::string_view, Enum>> choices) {
  std::string names;
  for (const auto& [name, choice] : choices) {
    if (value == name) return choice;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  SS_EXPECTS(false, "STREAMSAFE_ALLOC_CONF: ", key, ": '", value, "' is not one of: ", names);
  return choices.begin()->second;
}

void apply(allocator_options& options, std::string_view key, std::string_view value) {
  if (key == "segments") {
    options.segments = parse_choice<segment_kind>(key, value, {{"expandable", segment_kind::expandable}, {"fixed", segment_kind::fixed}});
  } else if (key == "cross_stream") {
    options.reuse = parse_choice<cross_stream_reuse>(key, value, {{"borrow", cross_stream_reuse::borrow}, {"never", cross_stream_reuse::never}});
  } else if (key == "small_request_limit") {
    options.small_request_limit = parse_size(key, value);
  } else if (key == "small_segment") {
    options.small_segment_bytes = parse_size(key, value);
  } else if (key == "large_segment") {
    options.large_segment_bytes = parse_size(key, value);
  } else if (key == "expandable_reserve") {
    options.expandable_reserve_bytes = parse_size(key, value);
  } else if (key == "granularity") {
    options.granularity = parse_size(key, value);
  } else if (key == "fence_batch") {
    options.fence_batch_frees = parse_size(key, value);
    SS_EXPECTS(options.fence_batch_frees >= 1, "STREAMSAFE_ALLOC_CONF: fence_batch must be at least 1");
  } else if (key == "fence_batch_bytes") {
    options.fence_batch_bytes = parse_size(key, value);
  } else if (key == "expandable_growth") {
    SS_EXPECTS(value != "stitch", "STREAMSAFE_ALLOC_CONF: expandable_growth:stitch was removed: it packed within 1% of ",
               "live memory but made device calls on most allocations in steady state; remap (the default) with the ",
               "repeat plan holds reserved near live with none");
    options.growth = parse_choice<expandable_growth>(key, value, {{"remap", expandable_growth::remap},
                                                                 {"map_new", expandable_growth::map_new},
                                                                 {"settle", expandable_growth::settle}});
  } else if (key == "repeat_plan") {
    options.repeat_plan = parse_choice<bool>(key, value, {{"on", true}, {"off", false}});
  } else if (key == "plan_in_background") {
    options.plan_in_background = parse_choice<bool>(key, value, {{"on", true}, {"off", false}});
  } else if (key == "remap_slack_percent") {
    options.remap_slack_percent = parse_size(key, value);
  } else if (key == "small_placement") {
    options.small_placement =
        parse_choice<small_block_placement>(key, value, {{"chunk_end", small_block_placement::chunk_end},
                                                         {"start", small_block_placement::start}});
  } else if (key == "history") {
    options.history_capacity = parse_size(key, value);
  } else {
    SS_EXPECTS(false, "STREAMSAFE_ALLOC_CONF: unknown key '", key,
               "' (known: segments, cross_stream, small_request_limit, small_segment, large_segment, "
               "expandable_reserve, expandable_growth, repeat_plan, plan_in_background, remap_slack_percent, small_placement, granularity, "
               "fence_batch, "
               "fence_batch_bytes, history)");
  }
}

}  // namespace

allocator_options parse_alloc_conf(std::string_view text, allocator_options base) {
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const std::size_t colon = item.find(':');
    SS_EXPECTS(colon != std::string_view::npos, "STREAMSAFE_ALLOC_CONF: '", item, "' is not key:value");
    apply(base, trim(item.substr(0, colon)), trim(item.substr(colon + 1)));
  }
  return base;
}

allocator_options alloc_options_from_env() {
  const char* text = std::getenv("STREAMSAFE_ALLOC_CONF");
  return text == nullptr ? allocator_options{} : parse_alloc_conf(text);
}

}  // namespace streamsafe
