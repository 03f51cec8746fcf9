#!/usr/bin/env bash
# On the GPU machine: builds alloc_bench and replay_bench with PyTorch's c10 caching allocator
# beside ours, cudaMalloc and cudaMallocAsync (one binary each), into .device-build/bin/.
# The machine lacks simdjson and zlib headers; bench/stage_gpu_binaries.sh carries them in
# .device-build/deps/usr.
set -euo pipefail
deps=$PWD/.device-build/deps/usr
torch_dir=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')
cmake -S . -B /tmp/torch-bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSTREAMSAFE_TESTS=OFF -DSTREAMSAFE_FUZZ=OFF -DSTREAMSAFE_TORCH_DIR="$torch_dir" \
  -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" -DZLIB_INCLUDE_DIR="$deps/include" \
  -DZLIB_LIBRARY="$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)" >/dev/null
cmake --build /tmp/torch-bench --target alloc_bench replay_bench -j 16 >/dev/null
mkdir -p .device-build/bin
cp /tmp/torch-bench/bench/alloc/alloc_bench /tmp/torch-bench/bench/alloc/replay_bench .device-build/bin/
echo "alloc_bench and replay_bench rebuilt here with PyTorch from $torch_dir"
