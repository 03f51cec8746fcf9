#!/usr/bin/env bash
# Stages, in .device-build/deps/usr (git-ignored), the headers and libraries the GPU machine
# lacks (simdjson, zlib's headers), so that bench/gpu_build_on_device.sh can build there:
#   run(command="bench/gpu_build_on_device.sh && bench/gpu_session.sh", carry=[".device-build"]).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
deps="$repo/.device-build/deps/usr"
rm -rf "$repo/.device-build/deps" && mkdir -p "$deps/include" "$deps/lib/x86_64-linux-gnu/cmake"
cp /usr/include/simdjson.h /usr/include/zlib.h /usr/include/zconf.h "$deps/include/"
cp -a /usr/lib/x86_64-linux-gnu/libsimdjson.so* "$deps/lib/x86_64-linux-gnu/"
cp -r /usr/lib/x86_64-linux-gnu/cmake/simdjson "$deps/lib/x86_64-linux-gnu/cmake/"
du -sh "$repo/.device-build/deps"
