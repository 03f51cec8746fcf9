set -u; R=/tmp/r; rm -rf $R; mkdir -p $R .device-build/bin .device-build/lib; export LD_LIBRARY_PATH=$PWD/.device-build/lib:/usr/local/cuda/lib64; T=.device-build/traces
{ nvidia-smi; date -u; nproc; python3 -c 'import torch;print(torch.__version__)'; } > $R/machine.txt 2>&1
s=$(date +%s); cp -a .device-build/deps/usr/lib/x86_64-linux-gnu/libsimdjson.so* .device-build/lib/
left() { echo $(( $1 - ($(date +%s)-s) )); }
bash bench/gpu_build_torch_bench.sh > $R/build.txt 2>&1; cmake --build /tmp/torch-bench --target streamsafe_cli -j16 >> $R/build.txt 2>&1; cp /tmp/torch-bench/tools/streamsafe/streamsafe .device-build/bin/
echo "build $(( $(date +%s)-s )) s" | tee -a $R/log.txt
for m in 1 2; do timeout 60 bash -c "RESNET_TRACE=$T/resnet50_train.alloc.csv.gz bench/alloc/repeat_plan_matrix.sh .device-build/bin/streamsafe cuda $T" > $R/repeat_plan_$m.jsonl 2>&1; echo "matrix $m $(( $(date +%s)-s )) s" | tee -a $R/log.txt; done
timeout 150 bash .device-build/tests.sh; echo "tests $(( $(date +%s)-s )) s" | tee -a $R/log.txt
TR="$T/resnet50_train.alloc.csv.gz bench/traces/gpt2_train.alloc.csv.gz $T/inf10_s1.csv.gz $T/inf10_s1_st4.csv.gz"
STREAMSAFE_COMMIT=$COMMIT RESOURCES="streamsafe:remap streamsafe:repeat_plan:off c10 c10_expandable cuda_async" MODES="idle busy" TRACES="$TR" RUN_TIMEOUT=90 timeout 200 bench/alloc/replay_bench.sh $R/replay_bench.jsonl > $R/replay_stdout.txt 2>&1
echo "replay $(( $(date +%s)-s )) s" | tee -a $R/log.txt
for rep in 2 3; do
STREAMSAFE_COMMIT=$COMMIT RESOURCES="streamsafe:remap streamsafe:repeat_plan:off c10" MODES="idle busy" TRACES="$TR" RUN_TIMEOUT=90 timeout $(left 470) bench/alloc/replay_bench.sh $R/replay_bench_rep$rep.jsonl > $R/replay_stdout_rep$rep.txt 2>&1
echo "rep $rep $(( $(date +%s)-s )) s" | tee -a $R/log.txt
done
STREAMSAFE_COMMIT=$COMMIT ITERATIONS=30 RESOURCES="streamsafe:remap streamsafe:repeat_plan:off c10" MODES="idle busy" TRACES="$T/resnet50_train.alloc.csv.gz bench/traces/gpt2_train.alloc.csv.gz" RUN_TIMEOUT=60 timeout $(left 560) bench/alloc/replay_bench.sh $R/replay_bench_30.jsonl > $R/replay30_stdout.txt 2>&1
echo "total $(( $(date +%s)-s )) s" | tee -a $R/log.txt
for f in $R/replay_bench*.jsonl; do python3 bench/alloc/replay_ratios.py $f > ${f%.jsonl}.ratios.txt 2>&1; done
tar czf $OUT/run.tar.gz -C /tmp r
