# Session 35's device call: session 32's (the CLI and the allocator's GPU suites built with cuda
# on, sm_90; the suites; the calls matrix on cuda; rounds of bench/alloc/replay_bench.sh over
# every trace, streamsafe's default beside c10, idle and busy; the medians), then, in its build,
# the GPU tests of the hazard tracker, the pipeline's hazards and the NCCL communicator, and
# the machine's transparent huge page settings. Everything lands in $OUT/run.tar.gz.
#   run(command="bash bench/results/h200-2026-12-06-session35/run1/device_call.sh", carry=[".device-build"])
set -u
bash bench/results/h200-2026-12-05-session32/run1/device_call.sh
R=/tmp/r; build=/tmp/b; s=$(date +%s)
export LD_LIBRARY_PATH=$PWD/.device-build/deps/usr/lib/x86_64-linux-gnu:$PWD/.device-build/lib:/usr/local/cuda/lib64
cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag > $R/thp.txt 2>&1
suites="hazard_tracker_tests pipeline_hazards_test collectives_nccl_test"
cmake --build $build -j 16 --target $suites > $R/build_more.txt 2>&1; echo "more built $(( $(date +%s)-s )) s rc $?" | tee -a $R/log.txt
for t in $suites; do
  bin=$(find $build/tests -name $t -type f | head -1)
  timeout 60 $bin --gtest_brief=1 > $R/tests/$t.txt 2>&1; echo "$t: exit $? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $R/tests/$t.txt | tr '\n' ' ')" | tee -a $R/log.txt
done
tar czf $OUT/run.tar.gz -C /tmp r
