set -u; R=/tmp/r; rm -rf $R; mkdir -p $R .device-build/bin .device-build/lib; export LD_LIBRARY_PATH=$PWD/.device-build/lib:/usr/local/cuda/lib64; T=.device-build/traces
{ nvidia-smi; date -u; nproc; lscpu | head -20; } > $R/machine.txt 2>&1
s=$(date +%s); cp -a .device-build/deps/usr/lib/x86_64-linux-gnu/libsimdjson.so* .device-build/lib/
deps=$PWD/.device-build/deps/usr; zlib=$(ls /lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libz.so.1 2>/dev/null | head -1)
cmake -S . -B /tmp/cli -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSTREAMSAFE_TESTS=OFF -DSTREAMSAFE_BENCHMARKS=OFF -DSTREAMSAFE_FUZZ=OFF -DSTREAMSAFE_PYTHON=OFF -DCMAKE_CXX_FLAGS="-isystem $deps/include" -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" -DZLIB_INCLUDE_DIR="$deps/include" -DZLIB_LIBRARY="$zlib" > $R/build.txt 2>&1
cmake --build /tmp/cli --target streamsafe_cli -j16 >> $R/build.txt 2>&1; cp /tmp/cli/tools/streamsafe/streamsafe .device-build/bin/
echo "build $(( $(date +%s)-s )) s" | tee -a $R/log.txt
timeout 90 bash -c "RESNET_TRACE=$T/resnet50_train.alloc.csv.gz bench/alloc/repeat_plan_matrix.sh .device-build/bin/streamsafe cuda $T" > $R/repeat_plan_matrix.jsonl 2>&1; echo "matrix $(( $(date +%s)-s )) s" | tee -a $R/log.txt
timeout 150 bash bench/results/h200-2026-12-04-session30/run4/tests.sh; echo "tests $(( $(date +%s)-s )) s" | tee -a $R/log.txt
tar czf $OUT/run.tar.gz -C /tmp r
