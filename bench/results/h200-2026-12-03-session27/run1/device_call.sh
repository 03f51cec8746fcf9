set -u; R=/tmp/r; rm -rf $R; mkdir -p $R .device-build/bin .device-build/lib; export LD_LIBRARY_PATH=$PWD/.device-build/lib:/usr/local/cuda/lib64; T=.device-build/traces
{ nvidia-smi; nvidia-smi topo -m; date -u; nproc; lscpu | head -20; python3 -c 'import torch;print(torch.__version__)'; } > $R/machine.txt 2>&1
s=$(date +%s); cp -a .device-build/deps/usr/lib/x86_64-linux-gnu/libsimdjson.so* .device-build/lib/
bash bench/gpu_build_torch_bench.sh > $R/build.txt 2>&1; cmake --build /tmp/torch-bench --target streamsafe_cli -j16 >> $R/build.txt 2>&1; cp /tmp/torch-bench/tools/streamsafe/streamsafe .device-build/bin/
echo "build $(( $(date +%s)-s )) s" | tee -a $R/log.txt
timeout 60 bash -c "RESNET_TRACE=$T/resnet50_train.alloc.csv.gz bench/alloc/repeat_plan_matrix.sh .device-build/bin/streamsafe cuda $T" > $R/repeat_plan_matrix.jsonl 2>&1; echo "matrix $(( $(date +%s)-s )) s" | tee -a $R/log.txt
timeout 150 bash .device-build/tests.sh; echo "tests $(( $(date +%s)-s )) s" | tee -a $R/log.txt
TR="$T/resnet50_train.alloc.csv.gz bench/traces/gpt2_train.alloc.csv.gz $T/inf10_s1.csv.gz $T/inf10_s1_st4.csv.gz"
STREAMSAFE_COMMIT=$COMMIT ROUNDS=4 RESOURCES="streamsafe:remap c10" MODES="idle busy" TRACES="$TR" RUN_TIMEOUT=90 timeout 280 bench/alloc/replay_bench.sh $R/rounds.jsonl > $R/rounds_stdout.txt 2>&1
echo "rounds $(( $(date +%s)-s )) s" | tee -a $R/log.txt
STREAMSAFE_COMMIT=$COMMIT RESOURCES="c10_expandable cuda_async streamsafe:repeat_plan:off" MODES="idle busy" TRACES="$TR" RUN_TIMEOUT=90 timeout $(( (560 - ($(date +%s)-s)) > 10 ? 560 - ($(date +%s)-s) : 10 )) bench/alloc/replay_bench.sh $R/others.jsonl > $R/others_stdout.txt 2>&1
echo "total $(( $(date +%s)-s )) s" | tee -a $R/log.txt
for f in $R/rounds.jsonl $R/others.jsonl; do python3 bench/alloc/replay_ratios.py $f > ${f%.jsonl}.ratios.txt 2>&1; done
tar czf $OUT/run.tar.gz -C /tmp r
