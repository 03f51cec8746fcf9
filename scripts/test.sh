#!/usr/bin/env bash
# Builds and runs every test, the way CI does:
#   1. all tests under AddressSanitizer + UndefinedBehaviorSanitizer (cuda backend built; its
#      GPU tests skip without a GPU);
#   2. the mutation check: each safety-critical edit of the allocator must make a test fail
#      (scripts/mutation_check.sh, docs/mutation_check.md);
#   3. the threaded tests (label `threaded`) under ThreadSanitizer;
#   4. the libFuzzer targets with clang, each for FUZZ_SECONDS (default 20) from its corpus;
#   5. an install, and a separate CMake project that find_package(streamsafe)s it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)
fuzz_seconds=${FUZZ_SECONDS:-20}
root=$PWD/build/ci

stage() { printf '\n=== %s ===\n' "$*"; }

stage "1/5 AddressSanitizer + UndefinedBehaviorSanitizer: all tests"
cmake -S . -B "$root/asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1" \
      -DSTREAMSAFE_SANITIZE=address,undefined -DSTREAMSAFE_BENCHMARKS=OFF
cmake --build "$root/asan" -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:protect_shadow_gap=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$root/asan" --output-on-failure -j "$jobs" --timeout 900

stage "2/5 mutation check: every safety-critical edit of the allocator fails a test"
MUTATION_DIR="$root/mutation" JOBS="$jobs" scripts/mutation_check.sh

stage "3/5 ThreadSanitizer: threaded tests"
cmake -S . -B "$root/tsan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1" \
      -DSTREAMSAFE_SANITIZE=thread -DSTREAMSAFE_CUDA=OFF -DSTREAMSAFE_BENCHMARKS=OFF -DSTREAMSAFE_FUZZ=OFF -DSTREAMSAFE_PYTHON=OFF
cmake --build "$root/tsan" -j "$jobs"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir "$root/tsan" --output-on-failure -L threaded --timeout 900

stage "4/5 libFuzzer targets (clang), ${fuzz_seconds}s each"
cmake -S . -B "$root/fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
      -DSTREAMSAFE_SANITIZE=address,undefined -DSTREAMSAFE_CUDA=OFF -DSTREAMSAFE_TESTS=OFF \
      -DSTREAMSAFE_BENCHMARKS=OFF -DSTREAMSAFE_PYTHON=OFF
fuzz_targets=$(sed -n 's/^ *streamsafe_fuzz_target(\([a-z_]*\) .*/\1/p' fuzz/*.cmake 2>/dev/null || true)
for target in $fuzz_targets; do
  cmake --build "$root/fuzz" -j "$jobs" --target "$target"
  corpus=$(sed -n "s/^ *streamsafe_fuzz_target($target [^ ]* \([^)]*\)).*/\1/p" fuzz/*.cmake)
  work=$(mktemp -d)
  cp -r "fuzz/$corpus/." "$work/"
  mkdir -p "$root/fuzz/artifacts"
  status=0
  "$root/fuzz/fuzz/$target" -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$root/fuzz/artifacts/$target-" "$work" > "$work.log" 2>&1 || status=$?
  grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$work.log" || true
  if [ "$status" -ne 0 ]; then
    tail -40 "$work.log"
    echo "fuzz target $target failed (exit $status); the input is in $root/fuzz/artifacts/"
    exit 1
  fi
  rm -rf "$work" "$work.log"
done

stage "5/5 install, then find_package(streamsafe) from another project"
cmake --install "$root/asan" --prefix "$root/prefix" >/dev/null
cmake -S tests/install_consumer -B "$root/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$root/prefix" \
      -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
cmake --build "$root/consumer"
"$root/consumer/consumer"
# The installed Python package imports (its module is built with the sanitizers: preload them).
site=$(ls -d "$root"/prefix/lib*/python3*/site-packages 2>/dev/null | head -1)
if [ -n "$site" ] && [ -d "$site/streamsafe" ]; then
  LD_PRELOAD="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)" ASAN_OPTIONS=detect_leaks=0 \
    PYTHONPATH="$site" /usr/bin/python3 -c "import streamsafe, streamsafe._engine; print('python package installed at', '$site')"
fi

stage "all stages passed"
