#!/usr/bin/env bash
# On the GPU machine, after bench/gpu_build_on_device.sh: every tests/torch/sanitize_*.py program
# (one JSON line per variant, reports on stderr) and bench/torch/sanitize_bench.py, with their
# output under $OUT (default ./out). Exit status: the number of programs that failed.
set -uo pipefail
out=${OUT:-$PWD/out}
mkdir -p "$out/sanitize"
export PYTHONPATH="$PWD/.device-build/python:$PWD/tests/torch${PYTHONPATH:+:$PYTHONPATH}"
python3 -c "import torch, streamsafe.torch; print('torch', torch.__version__, torch.cuda.get_device_name())" \
  | tee "$out/sanitize/environment.txt" || exit 1
failed=0
for program in tests/torch/sanitize_*.py; do
  name=$(basename "$program" .py)
  [ "$name" = sanitize_support ] && continue
  python3 "$program" > "$out/sanitize/$name.jsonl" 2> "$out/sanitize/$name.log"
  status=$?
  echo "$name: exit $status"
  [ "$status" -eq 0 ] || failed=$((failed + 1))
done
python3 bench/torch/sanitize_bench.py --out "$out/sanitize" > "$out/sanitize/bench_summary.json" 2> "$out/sanitize/bench.log" \
  || { echo "sanitize_bench failed"; tail -20 "$out/sanitize/bench.log"; failed=$((failed + 1)); }
cat "$out/sanitize/bench_summary.json"
# The device tool brings back few files: the programs' output goes back as one archive.
tar -czf "$out/sanitize.tar.gz" -C "$out" sanitize && rm -rf "$out/sanitize"
exit "$failed"
