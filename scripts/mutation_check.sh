#!/usr/bin/env bash
# Applies safety-critical edits to the allocator and the pipeline, one at a time, to a scratch copy of the tree,
# and requires each to make some test fail (docs/mutation_check.md lists them and the
# tests that catch them). An edit that every test survives, or whose text is no longer in its
# file (the list would otherwise rot silently), fails the script.
#
#   scripts/mutation_check.sh [--list] [NAME...]
#
# NAMEs pick mutations (default: all). The scratch copy and its build directory are kept in
# $MUTATION_DIR (default build/mutation), so a second run rebuilds only what changed. Tests run
# with a timeout: a hang counts as caught. MUTATION_TREE and MUTATION_BUILD name a tree and its
# configured build directory to mutate instead (the working tree and build/dev, for a quick run
# during development: each file is restored after its mutation, but do not build from that tree
# meanwhile).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
scratch=${MUTATION_DIR:-$repo/build/mutation}
tree=${MUTATION_TREE:-$scratch/tree}
build=${MUTATION_BUILD:-$scratch/build}
jobs=${JOBS:-$(nproc)}
test_timeout=${MUTATION_TEST_TIMEOUT:-300}
# The binaries that run for a mutation, in order, unless it names its own (mutation_in); the
# first to fail stops the rest.
default_binaries="alloc_reuse_test alloc_rules_test"

names=() files=() finds=() replaces=() binaries=()
# mutation NAME FILE FIND REPLACE: replaces the one occurrence of the literal text FIND in FILE.
mutation() { mutation_in "$default_binaries" "$@"; }
# mutation_in "BINARY..." NAME FILE FIND REPLACE: as mutation, caught by the binaries named; a
# BINARY:FILTER runs only the tests FILTER names (a --gtest_filter).
mutation_in() { binaries+=("$1"); names+=("$2"); files+=("$3"); finds+=("$4"); replaces+=("$5"); }

ladder=src/alloc/allocator_ladder.cpp
impl=src/alloc/caching_allocator_impl.cpp
release=src/alloc/pool_memory.cpp
mapped=src/alloc/growth_map_new.cpp
source=src/alloc/memory_source.cpp
pending=src/alloc/pending_frees.cpp
uncached=src/alloc/uncached_resource.cpp
poison=src/alloc/poison_adaptor.cpp
plan=src/alloc/iteration_plan.cpp
lending=src/alloc/plan_lending.cpp

mutation borrow-skips-wait "$ladder" \
  '    StreamRef(&pool.stream()).wait(lender_done);' ''
mutation borrow-skips-event-record "$ladder" \
  '    lender_done.record(StreamRef(&lender->stream()));' ''
mutation remap-unmaps-without-sync "$mapped" \
  'if (!moved.empty()) context_.memory.give_back(pool, moved, true);' \
  'if (!moved.empty()) context_.memory.give_back(pool, moved, false);'
mutation remap-takes-other-streams-chunks-under-queued-work src/alloc/growth_remap.cpp \
  '    if (!done) {' '    if (false) {'
mutation release-without-sync "$ladder" \
  '  memory_.give_back(pool, taken, true);' '  memory_.give_back(pool, taken, false);'
mutation unmap-partly-used-chunk "$release" \
  'const std::size_t first = round_up(offset, s.granularity) / s.granularity;' \
  'const std::size_t first = offset / s.granularity;'
mutation release-fixed-segment-with-live-blocks "$release" \
  '} else if (wholly_free(*s)) {' '} else {'
mutation drain-skips-wait "$pending" \
  'waiting[waited].taken.event.synchronize();' ';'
mutation drain-skips-open-fences "$pending" \
  'std::exception_ptr failed = try_record_open(s);' 'std::exception_ptr failed;'
mutation poll-reclaims-before-fence "$pending" \
  'while (!s.in_flight.empty() && s.in_flight.front().event.query()) {' 'while (!s.in_flight.empty()) {'
mutation fence-ignores-other-streams "$pending" \
  '    if (--e.fences_left != 0) continue;  // another stream still uses it' '    --e.fences_left;'
mutation record-stream-drops-stream "$impl" \
  '    streams.push_back(std::move(share));' ''
mutation fast-path-ignores-recorded-streams "$impl" \
  'if (&user == &owner && b->recorded_streams.empty()) {' 'if (&user == &owner) {'
mutation lent-block-home-without-borrower "$impl" \
  '    waits_for.push_back(user.stream_share());' ''
mutation uncached-record-stream-noop "$uncached" \
  'if (&stream.impl() != it->second.stream.get()) it->second.recorded.push_back(detail::share_stream(stream.impl()));' ''
mutation uncached-free-skips-wait "$uncached" \
  '    stream.wait(done);' ''
mutation poison-ignores-recorded-streams "$poison" \
  'for (const std::shared_ptr<detail::StreamImpl>& user : recorded) poisoner.wait(StreamRef(user.get()));' ''
mutation poison-block-reusable-before-fill "$poison" \
  '  upstream_.record_stream(ptr, poisoner);' ''
mutation_in alloc_repeat_plan_test plan-reuse-skips-previous-stream "$plan" \
  '    add_unique(waits, before.stream, stream);' ''
mutation_in alloc_repeat_plan_test plan-reuse-skips-recorded-streams "$plan" \
  '    for (const auto& r : before.recorded) add_unique(waits, r, stream);' ''
mutation_in alloc_repeat_plan_test plan-known-predecessor-skips-stream "$plan" \
  '    add_unique(waits, blocks_[p].stream, stream);' ''
mutation_in alloc_repeat_plan_test plan-known-predecessor-skips-recorded "$plan" \
  '    for (const auto& r : blocks_[p].recorded) add_unique(waits, r, stream);' ''
mutation_in alloc_repeat_plan_test plan-wrapped-predecessors-unlearned "$plan" \
  $'    } else if (taken_since_activation_ == period) {\n      learn_wrapped_predecessors();\n    }' '    }'
mutation_in alloc_repeat_plan_test plan-first-takings-skip-history "$plan" \
  '    if (holder == occupancy_tree::nobody || holder == history_index()) {' '    if (holder == occupancy_tree::nobody) {'
mutation_in alloc_repeat_plan_test plan-starts-out-of-address-order "$plan" \
  $'  std::sort(by_address.begin(), by_address.end(),\n            [this](std::size_t x, std::size_t y) { return ranges_[x].address < ranges_[y].address; });\n' ''
mutation_in alloc_repeat_plan_test plan-restart-skips-earlier-users "$plan" \
  $'  lock.unlock();\n  if (out.ptr != nullptr && !waits.empty()) order_after(out.ptr, rounded, stream, waits);' '  lock.unlock();'
mutation_in alloc_repeat_plan_test plan-unmaps-arena-without-sync "$plan" \
  $'    StreamRef(user).synchronize();\n    host_.note_host_sync();' '    host_.note_host_sync();'
mutation_in alloc_repeat_plan_test plan-lent-bytes-skip-lender "$plan" \
  $'  history_ = {};\n  for (const arena_range& r : ranges_) remember_user(r.lender);\n  occupancy_.reset' $'  history_ = {};\n  occupancy_.reset'
mutation_in alloc_repeat_plan_test plan-derailed-keeps-lent-memory "$plan" \
  '  if (phase_ != phase::derailed || !unused() || ranges_.empty() || ranges_.front().lender == nullptr) return;' '  return;'
mutation_in alloc_repeat_plan_test plan-job-starts-over-other-memory "$plan" \
  '  const bool holds = same_ranges(lent, job_view_) && host_.within_slack' '  const bool holds = host_.within_slack'
mutation_in alloc_repeat_plan_test plan-background-option-ignored "$impl" \
  '                                             options_.plan_in_background);' '                                             false);'
mutation_in alloc_repeat_plan_test plan-keeps-overlapping-places "$plan" \
  '         places_apart(blocks, offsets, period);' '         true;'
mutation_in alloc_repeat_plan_test plan-takes-bytes-an-occupant-holds "$plan" \
  '    if (occupant(holder).state != slot_state::free) return false;' '    (void)holder;'
mutation_in alloc_repeat_plan_test plan-job-given-up-is-proposed-again "$plan" \
  '    if (sequence_ + 1 - book_.first_sequence < book_.requests.size()) detector_.forbid(book_.requests.size());' ''
mutation_in alloc_repeat_plan_test plan-free-takes-expected-block-freed-already "$plan" \
  '          blocks_[index].state == slot_state::live) {' '          true) {'
mutation_in alloc_repeat_plan_test plan-free-takes-expected-block-elsewhere "$plan" \
  '      if (index != unplanned && blocks_[index].address == reinterpret_cast<std::uintptr_t>(ptr) &&' '      if (index != unplanned &&'
mutation_in alloc_repeat_plan_test:PrefaultedResource.* prefaulted-pages-unmapped-in-use src/common/prefaulted_resource.cpp \
  '  if (current_.outstanding != 0) retiring_.push_back(std::move(current_));  // room reserved by prepare()' ''
mutation_in alloc_repeat_plan_test:PrefaultedResource.* prefaulted-region-unmapped-at-first-free src/common/prefaulted_resource.cpp \
  '    if (--r->outstanding == 0) retiring_.erase(r);  // its pages are unmapped with it' '    retiring_.erase(r);'
mutation_in alloc_repeat_plan_test:OffsetPlanner.* planner-sweep-misses-wrapping-lifetimes src/alloc/offset_planner.cpp \
  '      if (next.second_turn) {' '      if (!next.second_turn) {'
mutation_in alloc_repeat_plan_test:OffsetPlanner.* planner-sweep-ends-lifetimes-early src/alloc/offset_planner.cpp \
  '      for (; swept_to <= next.begin; ++swept_to) {' '      for (; swept_to <= next.begin + 1; ++swept_to) {'
mutation_in alloc_repeat_plan_test lent-block-back-before-plan-streams "$lending" \
  '    StreamRef(&lender).wait(done);' ''
mutation_in alloc_repeat_plan_test:*/PlanLending.* release-takes-lent-block "$release" \
  '    if (b->state != block_state::free) continue;' '    if (b->state != block_state::free && !b->lent) continue;'
mutation_in alloc_repeat_plan_test:*/PlanLending.* release-when-done-at-once "$release" \
  '    if (!done->query()) {' '    if (false) {'
mutation_in alloc_repeat_plan_test:*/PlanLending.* waiting-release-given-back-under-work "$release" \
  '      if (!slow.owns_lock() || !it->done.query()) {' '      if (!slow.owns_lock()) {'
mutation_in alloc_repeat_plan_test:*/PlanLending.* growth-maps-beside-waiting-release "$mapped" \
  '  context_.memory.cancel_release(pool);' ''
mutation_in alloc_repeat_plan_test:*/PlanLending.* retire-leaves-waiting-release "$impl" \
  '  memory_.cancel_release(pool);  // all of it goes below, or none' ''
mutation_in alloc_repeat_plan_test:*/PlanFixture.* plan-never-asks-waiting-release "$plan" \
  '    ask_waiting_releases(planned_requests_);' ''
mutation_in alloc_repeat_plan_test:*/PlanFixture.* plan-forgets-release-waits "$plan" \
  '  releases_waiting_.store(true, std::memory_order_relaxed);' ''
mutation_in alloc_repeat_plan_test:*/PlanFixture.* plan-log-never-asks-waiting-release "$plan" \
  '  ask_waiting_releases(sequence);  // a plan derailed before they went back' ''
mutation_in alloc_repeat_plan_test:*/PlanFixture.* plan-log-free-never-asks-waiting-release "$plan" \
  $'  ++sequence_;\n  ask_waiting_releases(sequence_);' '  ++sequence_;'

# Failure paths and streams that go (alloc_lifetime_test).
lifetime=alloc_lifetime_test
mutation_in $lifetime forget-chunk-before-unmap "$source" \
  '  unmap_physical(address, count * granularity);  // a failure leaves the chunks known, still mapped' \
  '  for (std::size_t i = 0; i < count; ++i) chunks_.erase(address + i * granularity); unmap_physical(address, count * granularity);'
mutation_in $lifetime unmap-run-spans-live-chunk "$release" \
  '         taken.chunks[first + run].index == c.index + run) {' '         true) {'
mutation_in alloc_trace_test:*MemorySource.* sim-release-frees-mapped-memory src/alloc/sim_memory.cpp \
  '    if (mappings_[handle] != 0) {' '    if (false) {'
mutation_in $lifetime failed-unmap-forgets-chunk "$release" \
  '    taken.chunks[i].owner->chunk_mapped[taken.chunks[i].index] = true;' ''
mutation_in $lifetime retire-without-idle-query "$impl" \
  '    if (!StreamRef(share.get()).query()) continue;' ''
mutation_in $lifetime destructor-synchronizes-device "$impl" \
  '    if (!pool->segments().empty()) quietly("stream synchronize", [&] { pool->stream().synchronize(); });' \
  '    quietly("device synchronize", [&] { device_.synchronize(); });'
# The soak's device checks (tags written on each block's stream, checked before its free) can
# fail: remap-unmaps-without-sync again, seen by the soak alone (a queued tag check touches a
# moved chunk).
mutation_in alloc_soak_test:AllocatorSoak.ExpandableSegmentsMovingEveryFreeChunk soak-sees-unmap-before-sync "$mapped" \
  'if (!moved.empty()) context_.memory.give_back(pool, moved, true);' \
  'if (!moved.empty()) context_.memory.give_back(pool, moved, false);'

# The pipeline's hand-offs (tests/pipeline): each edit drops one ordering the pipeline inserts,
# and the test that starves the stream on the losing side sees another batch's bytes.
session=src/pipeline/run_session.cpp
mutation_in pipeline_ordering_test:*ConsumerWaitsForTheProducersEdge* pipeline-skips-edge-wait "$session" \
  '    wait_end(stage, in.from, batch, events_[slot_of(batch)].edges[input.edge]);' ''
mutation_in pipeline_ordering_test:*SlotFence* pipeline-skips-slot-fence "$session" \
  'for (const std::size_t user : graph.stages[stage].fence) wait_end(stage, user, batch - depth, events_[slot].done[user]);' ';'
mutation_in pipeline_ordering_test:*ProducerNeverWrites* pipeline-producer-skips-fence "$session" \
  'for (const std::size_t reader : graph.buffers[graph.staging].readers) fence_wait(events_[slot].done[reader]);' ';'
mutation_in pipeline_ordering_test:*ResultsAreReadOnlyAfter* pipeline-reads-results-before-fence "$session" \
  'attributed(batch, stage_name(writer), [&] { fence_wait(events_[slot].done[writer]); });' ';'
mutation_in pipeline_training_test:*ASignalOrders* pipeline-skips-signal-wait "$session" \
  '  owner_.streams[stage].wait(events_[slot_of(batch)].signals[signal]);' ''
mutation_in pipeline_training_test:*ComputeReadsTheWeights* pipeline-skips-previous-step "$session" \
  '    wait_end(stage, in.from, batch - 1, events_[slot_of(batch - 1)].edges[input.edge]);' ''
mutation_in pipeline_training_test:*ComputeReadsTheWeights* pipeline-skips-initialize-wait "$session" \
  '  owner_.streams[stage].wait(initialized_[writer]);' ''
mutation_in pipeline_training_test:*TheStepFollows* pipeline-step-skips-unread-stages "$session" \
  'for (const std::size_t e : graph.stages[stage].eager) wait_end(stage, graph.edges[e].from, batch, events_[slot].edges[e]);' ';'

# The sync stage (tests/pipeline/sync_test.cpp, 2 and 4 sim ranks): the comm stream's wait for the
# bucket's producer (backward starved: the all-reduce sums stale bytes), and the step stage's wait
# for the comm stage (comm starved: the step reads one rank's gradients instead of the sum).
graph=src/pipeline/stage_graph.cpp
mutation_in pipeline_sync_test:*TheCommStageReducesEachBucket* pipeline-reduces-before-bucket-ready "$session" \
  '  wait_signal(stage, batch, s);  // the bucket'"'"'s producer wrote it before the collective reads it' ''
mutation_in pipeline_sync_test:*TheStepReadsTheSums* pipeline-step-skips-reduce "$graph" \
  '    for (std::size_t m = 0; m < k; ++m) add_eager(graph, m, k);' ''
# Overlap: every all-reduce waits for the last bucket's signal (the whole of backward).
mutation_in pipeline_sync_test:*TheFirstBucketIsReduced* pipeline-sync-waits-for-all-of-backward src/pipeline/collectives/sync_stage.cpp \
  'ctx.all_reduce(*sync.comm, signals[b.id], ' 'ctx.all_reduce(*sync.comm, signals.back(), '

# One hazard tracker over several sim ranks' devices (tests/collectives/collective_hazards_test.cpp):
# a gated producer on rank 0, a peer read on rank 1; each edit drops or widens one ordering.
tracker=src/hazard/tracker.cpp
ranks=collectives_hazards_test
mutation_in $ranks:*AnAllReduceOrders* tracker-collective-never-joins "$tracker" \
  '        if (other.arrival != waiter.arrival) model.join_event(waiter.stream, other.arrival, completed);' ''
mutation_in $ranks:*WorkARankIssuesAfter* tracker-collective-joins-clocks-at-last-part "$tracker" \
  $'    const op_site completed = site("collective_complete");\n' \
  $'    const op_site completed = site("collective_complete");\n    for (const collective_part& part : parts) model.event_record(part.arrival, part.stream, completed);\n'
mutation_in $ranks:*SynchronizingTheReadersDevice* tracker-device-sync-orders-every-device "$tracker" \
  '  void on_device_synchronize() override { owner_->device_synchronized(device_); }' \
  '  void on_device_synchronize() override { owner_->on_device_synchronize(); }'
mutation_in $ranks:*DestroyedStreams* engine-device-sync-skips-destroyed-streams src/hazard/engine.cpp \
  '    if (agent.device != device) continue;' '    if (agent.device != device || agent.destroyed) continue;'
mutation_in $ranks:*NeverArrives* tracker-keeps-every-unfinished-collective "$tracker" \
  $'    give_up_collectives_before(group, sequence);\n' ''

selected=()
is_selected() {
  [ ${#selected[@]} -eq 0 ] && return 0
  local name
  for name in "${selected[@]}"; do [ "$name" = "$1" ] && return 0; done
  return 1
}

# The working tree's files: tracked and untracked, not ignored (every file but the build
# directories when the tree is not a git checkout).
tree_files() {
  if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard
  else
    find . \( -path './build*' -o -path ./.git -o -path ./.device-build \) -prune -o -type f -printf '%P\0'
  fi
}

# Copies the working tree into the scratch tree, touching only files whose contents differ, so
# the build there stays incremental.
sync_tree() {
  mkdir -p "$tree"
  tree_files | while IFS= read -r -d '' file; do
    [ -f "$file" ] || continue
    if ! cmp -s "$file" "$tree/$file"; then
      mkdir -p "$tree/$(dirname "$file")"
      cp "$file" "$tree/$file"
    fi
  done
}

# replace FILE FIND REPLACE: exactly one literal occurrence, else exit 2.
replace() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
path, find, replace = sys.argv[1:]
text = open(path).read()
count = text.count(find)
if count != 1:
    print(f"  pattern found {count} times in {path} (expected once): {find!r}")
    sys.exit(2)
open(path, "w").write(text.replace(find, replace))
PY
}

# build_tests BINARY...
build_tests() {
  cmake --build "$build" -j "$jobs" --target "${@%%:*}" > "$scratch/build.log" 2>&1
}

# test_binary NAME: the path of a test binary of the build (tests/alloc, tests/pipeline, ...).
test_binary() {
  local found
  for found in "$build"/tests/*/"$1"; do [ -x "$found" ] && { echo "$found"; return; }; done
  echo "$build/tests/alloc/$1"
}

# run_tests BINARY...: runs them; prints the failing tests (or, after a crash, the test that was
# running). Returns 0 when every test passed.
run_tests() {
  local binary filter status failed
  for binary in "$@"; do
    status=0
    filter=*
    [[ $binary == *:* ]] && filter=${binary#*:}
    timeout "$test_timeout" "$(test_binary "${binary%%:*}")" --gtest_filter="$filter" > "$scratch/test.log" 2>&1 || status=$?
    [ "$status" -eq 0 ] && continue
    failed=$(sed -n '/^\[  FAILED  \] [0-9]* tests\{0,1\},/d; s/^\[  FAILED  \] \([^ ,]*\)[ ,].*/\1/p' "$scratch/test.log" | sort -u | head -4 | paste -sd ' ' -)
    if [ -z "$failed" ]; then
      failed="$(sed -n 's/^\[ RUN      \] //p' "$scratch/test.log" | tail -1) (exit $status)"
      [ "$status" -eq 124 ] && failed="$failed (timed out after ${test_timeout}s)"
    fi
    echo "$binary: $failed"
    return 1
  done
  return 0
}

# The whole run is one function, read before it starts: editing this file mid-run is safe.
main() {
  if [ "${1:-}" = "--list" ]; then
    printf '%s\n' "${names[@]}"
    return 0
  fi
  selected=("$@")
  start=$(date +%s)
  echo "mutated tree: $tree"
  mkdir -p "$scratch"
  if [ -z "${MUTATION_TREE:-}" ]; then
    sync_tree
    cmake -S "$tree" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTREAMSAFE_CUDA=OFF \
          -DSTREAMSAFE_BENCHMARKS=OFF -DSTREAMSAFE_FUZZ=OFF -DSTREAMSAFE_SANITIZE= > "$scratch/configure.log" 2>&1 ||
      { cat "$scratch/configure.log"; exit 1; }
  fi
  local all_binaries=() i
  for i in "${!names[@]}"; do
    if is_selected "${names[$i]}"; then
      read -ra listed <<< "${binaries[$i]}"
      all_binaries+=("${listed[@]}")
    fi
  done
  read -ra all_binaries <<< "$(printf '%s\n' "${all_binaries[@]}" | awk '!seen[$0]++' | paste -sd ' ' -)"
  echo "baseline: building and running ${all_binaries[*]} unmutated"
  build_tests "${all_binaries[@]}" || { tail -40 "$scratch/build.log"; echo "mutation check: the unmutated tree does not build"; exit 1; }
  if ! baseline=$(run_tests "${all_binaries[@]}"); then
    echo "$baseline"
    echo "mutation check: the tests fail on the unmutated tree; fix them first"
    exit 1
  fi

  survived=() stale=() broken=()
  mutated=""
  trap '[ -n "$mutated" ] && cp "$scratch/original" "$mutated"' EXIT  # never leave a tree mutated
  for i in "${!names[@]}"; do
    name=${names[$i]} file=${files[$i]}
    is_selected "$name" || continue
    t0=$(date +%s)
    cp "$tree/$file" "$scratch/original"
    if ! replace "$tree/$file" "${finds[$i]}" "${replaces[$i]}"; then
      echo "STALE    $name: its text is no longer in $file; update scripts/mutation_check.sh"
      stale+=("$name")
      continue
    fi
    mutated=$tree/$file
    read -ra listed <<< "${binaries[$i]}"
    if ! build_tests "${listed[@]}"; then
      echo "BROKEN   $name: the mutated tree does not build (see $scratch/build.log)"
      broken+=("$name")
    elif verdict=$(run_tests "${listed[@]}"); then
      echo "SURVIVED $name ($file): every test passed"
      survived+=("$name")
    else
      echo "caught   $name ($(( $(date +%s) - t0 ))s) by $verdict"
    fi
    cp "$scratch/original" "$tree/$file"  # restored; a new mtime, so the next build recompiles it
    mutated=""
  done

  build_tests "${all_binaries[@]}"  # leaves the scratch build unmutated for the next run
  echo "mutation check: $(( $(date +%s) - start ))s"
  if [ ${#survived[@]} -ne 0 ] || [ ${#stale[@]} -ne 0 ] || [ ${#broken[@]} -ne 0 ]; then
    [ ${#survived[@]} -ne 0 ] && echo "mutation check FAILED: survived (no test sees them): ${survived[*]}"
    [ ${#stale[@]} -ne 0 ] && echo "mutation check FAILED: stale patterns: ${stale[*]}"
    [ ${#broken[@]} -ne 0 ] && echo "mutation check FAILED: mutations that do not build: ${broken[*]}"
    exit 1
  fi
  echo "mutation check passed: every mutation was caught"
}

main "$@"
