#!/usr/bin/env bash
# Builds the GPU test and benchmark binaries here (sm_90, Release) from the committed HEAD and
# stages them, with the shared libraries the GPU machine lacks, in .device-build/ (git-ignored),
# for the device tool to carry: run(command="bench/gpu_session.sh", carry=[".device-build"]).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
src=$(mktemp -d)
git -C "$repo" archive HEAD | tar -x -C "$src"
cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTREAMSAFE_FUZZ=OFF \
      -DCMAKE_CUDA_ARCHITECTURES=90 ${STREAMSAFE_TORCH_DIR:+-DSTREAMSAFE_TORCH_DIR=$STREAMSAFE_TORCH_DIR} >/dev/null
cmake --build "$src/build" -j "$(nproc)"
rm -rf "$repo/.device-build" && mkdir -p "$repo/.device-build/bin" "$repo/.device-build/lib"
find "$src/build/tests" "$src/build/bench" "$src/build/tools" -type f -perm -u+x \
     \( -name '*_test' -o -name '*_tests' -o -name '*_bench' -o -name streamsafe \) -exec cp {} "$repo/.device-build/bin/" \;
cp -L /lib/x86_64-linux-gnu/libbenchmark.so.1debian /lib/x86_64-linux-gnu/libsimdjson.so.* "$repo/.device-build/lib/" 2>/dev/null || true
# Headers and libraries the GPU machine lacks, for bench/gpu_build_torch_bench.sh to build there.
deps="$repo/.device-build/deps/usr"
mkdir -p "$deps/include" "$deps/lib/x86_64-linux-gnu/cmake"
cp /usr/include/simdjson.h /usr/include/zlib.h /usr/include/zconf.h "$deps/include/"
cp -a /usr/lib/x86_64-linux-gnu/libsimdjson.so* "$deps/lib/x86_64-linux-gnu/"
cp -r /usr/lib/x86_64-linux-gnu/cmake/simdjson "$deps/lib/x86_64-linux-gnu/cmake/"
rm -rf "$src"
du -sh "$repo/.device-build"
