#!/usr/bin/env bash
# Installs what streamsafe needs to build and test on Debian 12 (run as root). The CUDA toolkit
# is optional: when /usr/local/cuda/bin/nvcc exists the cuda backend is built too. pybind11 and
# Debian's torch (1.13, CPU) are for the Python package and its tests (label `python`).
set -euo pipefail
packages=(cmake ninja-build g++ make pkg-config zlib1g-dev libsimdjson-dev
          libgtest-dev libgmock-dev googletest libbenchmark-dev clang libclang-rt-14-dev python3
          python3-dev python3-pybind11 pybind11-dev python3-torch libtorch-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "dependencies present: ${packages[*]}"
