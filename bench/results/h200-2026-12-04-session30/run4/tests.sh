set -u; R=/tmp/r/tests; mkdir -p $R; deps=$PWD/.device-build/deps/usr; build=/tmp/alloc-tests; s=$(date +%s)
zlib=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSTREAMSAFE_FUZZ=OFF -DSTREAMSAFE_CUDA=ON -DCMAKE_CXX_FLAGS="-isystem $deps/include" -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" -DZLIB_INCLUDE_DIR="$deps/include" -DZLIB_LIBRARY="$zlib" -DSTREAMSAFE_TORCH_NATIVE=OFF > $R/configure.txt 2>&1
cmake --build $build -j 16 --target alloc_repeat_plan_test alloc_reuse_test alloc_rules_test alloc_lifetime_test alloc_thread_stress_test > $R/build.txt 2>&1; echo "tests built $(( $(date +%s)-s )) s rc $?" | tee -a /tmp/r/log.txt
for t in alloc_repeat_plan_test alloc_reuse_test alloc_rules_test alloc_lifetime_test alloc_thread_stress_test; do
  timeout 120 $build/tests/alloc/$t --gtest_brief=1 > $R/test_$t.txt 2>&1; echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $R/test_$t.txt | tr '\n' ' ')" | tee -a /tmp/r/log.txt
done
