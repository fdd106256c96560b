#!/usr/bin/env bash
set -euo pipefail
cd /work/main
RUN=runs/tabswift_small
python -m autogluon_maya.pretraining --stage 1 --model small --prior mix_scm+random_mlp \
  --threads 1 --num-workers 1 --seed 4 --max-prior-features 40 --lr 3e-4 \
  --init-from "$RUN/stage1c/tabswift_small_stage1c" --steps 1500 --time-limit 1100 \
  --checkpoint-every 100 --out-dir "$RUN/stage1d" --export "$RUN/stage1d/tabswift_small_stage1d"
python -m autogluon_maya.pretraining --stage 3 --model small --prior mix_scm+random_mlp \
  --threads 1 --num-workers 1 --seed 5 --max-prior-features 40 \
  --init-from "$RUN/stage1d/tabswift_small_stage1d" --steps 600 --time-limit 400 \
  --out-dir "$RUN/stage3d" --export "$RUN/stage3d/tabswift_small"
echo "extend done $(date)"
