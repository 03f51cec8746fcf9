set -u; mkdir -p /tmp/r; export LD_LIBRARY_PATH=$PWD/.device-build/lib:/usr/local/cuda/lib64; T=.device-build/traces
{ nvidia-smi; date -u; } > /tmp/r/machine.txt 2>&1
mkdir -p .device-build/lib; cp -a .device-build/deps/usr/lib/x86_64-linux-gnu/libsimdjson.so* .device-build/lib/
bash .device-build/tests.sh
cmake --build /tmp/alloc-tests -j 16 --target streamsafe_cli >> /tmp/r/tests/build.txt 2>&1
timeout 120 bash -c "RESNET_TRACE=$T/resnet50_train.alloc.csv.gz bench/alloc/repeat_plan_matrix.sh /tmp/alloc-tests/tools/streamsafe/streamsafe cuda $T" > /tmp/r/repeat_plan.jsonl 2>&1
echo "matrix done" >> /tmp/r/log.txt
