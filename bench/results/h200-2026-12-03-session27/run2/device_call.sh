set -u; R=/tmp/r; rm -rf $R; mkdir -p $R .device-build/bin .device-build/lib; export LD_LIBRARY_PATH=$PWD/.device-build/lib:/usr/local/cuda/lib64; T=.device-build/traces
{ nvidia-smi; date -u; nproc; lscpu | head -20; python3 -c 'import torch;print(torch.__version__)'; } > $R/machine.txt 2>&1
s=$(date +%s); cp -a .device-build/deps/usr/lib/x86_64-linux-gnu/libsimdjson.so* .device-build/lib/
bash bench/gpu_build_torch_bench.sh > $R/build.txt 2>&1
echo "build $(( $(date +%s)-s )) s" | tee -a $R/log.txt
TR="$T/resnet50_train.alloc.csv.gz bench/traces/gpt2_train.alloc.csv.gz $T/inf10_s1.csv.gz $T/inf10_s1_st4.csv.gz"
STREAMSAFE_COMMIT=$COMMIT ROUNDS=8 RESOURCES="streamsafe:remap c10" MODES="idle busy" TRACES="$TR" RUN_TIMEOUT=90 timeout 500 bench/alloc/replay_bench.sh $R/rounds.jsonl > $R/rounds_stdout.txt 2>&1
echo "total $(( $(date +%s)-s )) s" | tee -a $R/log.txt
python3 bench/alloc/replay_ratios.py $R/rounds.jsonl > $R/rounds.ratios.txt 2>&1
tar czf $OUT/run.tar.gz -C /tmp r
