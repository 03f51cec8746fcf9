#!/usr/bin/env bash
# On the GPU machine: builds the tests, benchmarks and CLI (Release, sm_90) from the working tree
# with the machine's own compilers, against the deps bench/stage_gpu_deps.sh carried, and puts
# the binaries where bench/gpu_session.sh looks (.device-build/bin, .device-build/lib).
set -euo pipefail
deps=$PWD/.device-build/deps/usr
build=${STREAMSAFE_DEVICE_BUILD:-/tmp/streamsafe-build}
zlib=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSTREAMSAFE_FUZZ=OFF \
  -DSTREAMSAFE_CUDA=ON -DCMAKE_CXX_FLAGS="-isystem $deps/include" -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" \
  -DZLIB_INCLUDE_DIR="$deps/include" -DZLIB_LIBRARY="$zlib" -DPython3_EXECUTABLE="$(command -v python3)" \
  -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir 2>/dev/null)" \
  -DSTREAMSAFE_TORCH_NATIVE="${STREAMSAFE_TORCH_NATIVE:-AUTO}" \
  > "$build.configure.log" 2>&1 \
  || { tail -30 "$build.configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" > "$build.build.log" 2>&1 || { grep -E "error|Error" "$build.build.log" | head -40; exit 1; }
mkdir -p .device-build/bin .device-build/lib
find "$build/tests" "$build/bench" "$build/tools" -type f -perm -u+x \
     \( -name '*_test' -o -name '*_tests' -o -name '*_bench' -o -name streamsafe \) -exec cp {} .device-build/bin/ \;
cp -a "$deps"/lib/x86_64-linux-gnu/libsimdjson.so* .device-build/lib/
# The Python package, when pybind11 was found: PYTHONPATH=.device-build/python (with the
# sanitizer's native tier, streamsafe/_torch_ops*.so, when the machine's torch was found).
if [ -d "$build/python/streamsafe" ]; then rm -rf .device-build/python; cp -a "$build/python" .device-build/python; fi
# PyTorch's pluggable allocator (tests/torch, bench/torch: STREAMSAFE_TORCH_ALLOC_LIB points here).
cp "$build"/python/torch_alloc/libstreamsafe_torch_alloc.so .device-build/lib/
echo "built $(ls .device-build/bin | wc -l) binaries in $build"
