# Sourced by the replay matrices: reads STREAMSAFE_BINARY [BACKEND] [TRACE_DIR] from the
# arguments, sets binary, backend, traces, here and resnet, and makes the generated inference
# traces (seeds 1 to 3, and seed 1 on 4 streams) if missing.
set -euo pipefail
binary=$1
backend=${2:-sim}
traces=${3:-/tmp/streamsafe-traces}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
resnet=${RESNET_TRACE:-$here/../shared/data/resnet50_train.alloc.csv.gz}
mkdir -p "$traces"
for seed in 1 2 3; do
  [ -f "$traces/inference_seed$seed.csv.gz" ] ||
    python3 "$here/scripts/gen_inference_trace.py" "$traces/inference_seed$seed.csv.gz" --requests 200 --seed $seed
done
[ -f "$traces/inference_seed1_streams4.csv.gz" ] ||
  python3 "$here/scripts/gen_inference_trace.py" "$traces/inference_seed1_streams4.csv.gz" --requests 200 --seed 1 \
    --streams 4
