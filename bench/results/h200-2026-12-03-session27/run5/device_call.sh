set -u; R=/tmp/r; rm -rf $R; mkdir -p $R; s=$(date +%s)
{ nvidia-smi; date -u; nproc; } > $R/machine.txt 2>&1
timeout 140 bash .device-build/tests.sh; echo "tests $(( $(date +%s)-s )) s" | tee -a $R/log.txt
tar czf $OUT/run.tar.gz -C /tmp r
