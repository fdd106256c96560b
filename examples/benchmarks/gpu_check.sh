#!/usr/bin/env bash
# GPU check: MAYA bf16 vs fp32, TabSwift RELEASED-size bf16 vs fp32, a 4-trial HPO at 0.25 GPU
# per trial, 50 Ray Train DDP steps, and the GPU-fitted predictor reloaded with CUDA_VISIBLE_DEVICES="".
# About 6-7 min on one GPU (time limits: MAYA 2 x 75 s, HPO 120 s). Results: results.json + results.md in
# $OUT if set (the device machine's return folder), else examples/benchmarks/results/gpu_check/.
#   examples/benchmarks/gpu_check.sh            # on a GPU machine
#   examples/benchmarks/gpu_check.sh --cpu      # everything on the CPU with tiny sizes (what the test suite runs)
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python examples/benchmarks/gpu_check.py --out "${OUT:-examples/benchmarks/results/gpu_check}" "$@"
