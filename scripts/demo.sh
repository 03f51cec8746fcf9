#!/usr/bin/env bash
# The main job: build the CLI and run `streamsafe demo` (GPU when present, else the sim backend).
# Extra arguments go to the demo, e.g. scripts/demo.sh --json --trials 50.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTREAMSAFE_TESTS=OFF \
      -DSTREAMSAFE_BENCHMARKS=OFF -DSTREAMSAFE_FUZZ=OFF >/dev/null
cmake --build build/release --target streamsafe_cli
./build/release/tools/streamsafe/streamsafe demo "$@"
