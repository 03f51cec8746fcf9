set -u; R=/tmp/r; mkdir -p $R .device-build/bin .device-build/lib; export LD_LIBRARY_PATH=$PWD/.device-build/lib:/usr/local/cuda/lib64; T=.device-build/traces
{ nvidia-smi; date -u; python3 -c 'import torch;print(torch.__version__)'; } > $R/machine.txt 2>&1
s=$(date +%s); cp -a .device-build/deps/usr/lib/x86_64-linux-gnu/libsimdjson.so* .device-build/lib/
bash bench/gpu_build_torch_bench.sh > $R/build.txt 2>&1
echo "build $(( $(date +%s)-s )) s" | tee -a $R/log.txt
TR="$T/resnet50_train.alloc.csv.gz bench/traces/gpt2_train.alloc.csv.gz $T/inf10_s1.csv.gz $T/inf10_s1_st4.csv.gz"
for rep in 1 2 3; do
STREAMSAFE_COMMIT=$COMMIT RESOURCES="streamsafe:remap streamsafe:repeat_plan:off c10" MODES="idle busy" TRACES="$TR" RUN_TIMEOUT=90 timeout 170 bench/alloc/replay_bench.sh $R/replay_bench_rep$rep.jsonl > $R/replay_stdout_rep$rep.txt 2>&1
echo "rep $rep $(( $(date +%s)-s )) s" | tee -a $R/log.txt
done
