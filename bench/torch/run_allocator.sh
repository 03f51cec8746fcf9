#!/usr/bin/env bash
# On the GPU machine, after bench/gpu_build_on_device.sh: streamsafe's allocator as PyTorch's
# (tests/torch/allocator_gpu_test.py), its wrapper tax (alloc_tax.py) and variable-length GPT-2
# inference (varlen_inference.py). Everything goes to ${OUT:-/tmp/streamsafe-torch-alloc}.
set -uo pipefail
out=${OUT:-/tmp/streamsafe-torch-alloc}
mkdir -p "$out"
export STREAMSAFE_TORCH_ALLOC_LIB=${STREAMSAFE_TORCH_ALLOC_LIB:-$PWD/.device-build/lib/libstreamsafe_torch_alloc.so}
# The package as built (bench/gpu_build_on_device.sh copies it there): it holds the engine module.
export PYTHONPATH="$PWD/.device-build/python${PYTHONPATH:+:$PYTHONPATH}"
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)'
  git log -1 --format='commit: %H %s' 2>/dev/null || true
} > "$out/torch_machine.txt" 2>&1
cat "$out/torch_machine.txt"
status=0
python3 tests/torch/allocator_gpu_test.py --out "$out/torch_allocator_gpu_test.txt" || status=1
python3 bench/torch/alloc_tax.py --out "$out/torch_alloc_tax.json" > "$out/torch_alloc_tax.log" 2>&1 || status=1
tail -8 "$out/torch_alloc_tax.log"
python3 bench/torch/varlen_inference.py --out "$out/torch_varlen_inference.json" > "$out/torch_varlen_inference.log" 2>&1 || status=1
cat "$out/torch_varlen_inference.log"
exit $status
