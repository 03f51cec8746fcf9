#!/usr/bin/env bash
# Runs bench/collectives/allreduce_sweep with one process per GPU and records the machine's
# facts next to the table: the topology, the GPUs, the command and every rank's raw output.
#
#   bench/collectives/run_sweep.sh [NRANKS (default: all GPUs)] [OUT_DIR] [-- extra sweep flags]
#
# NVLink multicast stays off: a program using it can take the host's GPUs out of service.
set -euo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
here=$(cd "$(dirname "$0")" && pwd)
nranks=${1:-$(nvidia-smi -L | wc -l)}
out=${2:-bench/results/allreduce-sweep-$(hostname)-${nranks}gpu-$(date -u +%Y%m%dT%H%M%SZ)}
shift $(( $# < 2 ? $# : 2 ))
[[ "${1:-}" == "--" ]] && shift
mkdir -p "$out"
cuda=${CUDA_HOME:-/usr/local/cuda}
bin=${ALLREDUCE_SWEEP_BIN:-$(mktemp -d)/allreduce_sweep}  # not in OUT_DIR: results hold text only
if [[ ! -x "$bin" ]]; then
  nccl_lib=$(dirname "$(find -L "$cuda"/ /usr/lib /usr/local/lib -name 'libnccl.so*' 2>/dev/null | head -1)")
  g++ -std=c++17 -O2 -o "$bin" "$here/allreduce_sweep.cpp" -I"$cuda/include" -L"$cuda/lib64" -L"$nccl_lib" \
      -Wl,-rpath,"$nccl_lib" -lcudart -lnccl
fi
nvidia-smi topo -m > "$out/topo.txt" 2>&1 || true
nvidia-smi -L > "$out/gpus.txt" 2>&1 || true
id_file=$(mktemp -u /tmp/allreduce_sweep_id.XXXXXX)
echo "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE $0 $nranks $out $*  (each rank: $bin --rank R --nranks $nranks --id-file $id_file $*)" \
  > "$out/command.txt"
pids=()
for ((r = 0; r < nranks; ++r)); do
  "$bin" --rank "$r" --nranks "$nranks" --id-file "$id_file" "$@" > "$out/rank$r.txt" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
rm -f "$id_file"
cat "$out/rank0.txt"
exit $status
