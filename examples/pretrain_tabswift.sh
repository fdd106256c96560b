#!/usr/bin/env bash
# Recipe of the shipped TabSwift checkpoint (README "TabSwift checkpoint"): stage 1 on tabicl's mix_scm
# prior, then stage 3 (exit heads, backbone frozen).  Resumable: rerun the same command after an
# interruption.  Needs `pip install -e ".[pretrain]"`.  Usage: examples/pretrain_tabswift.sh [RUN_DIR]
# Environment knobs: STAGE1_STEPS, STAGE1_TIME (s), STAGE3_STEPS, STAGE3_TIME (s), THREADS, WORKERS.
set -euo pipefail
RUN=${1:-runs/tabswift_small}
python -m autogluon_maya.pretraining --stage 1 --model small --prior mix_scm --seed 0 \
  --steps "${STAGE1_STEPS:-4000}" --time-limit "${STAGE1_TIME:-5100}" \
  --threads "${THREADS:-1}" --num-workers "${WORKERS:-1}" \
  --checkpoint-every 100 --out-dir "$RUN/stage1" --export "$RUN/stage1/tabswift_small_stage1"
python -m autogluon_maya.pretraining --stage 3 --model small --prior mix_scm --seed 1 \
  --init-from "$RUN/stage1/tabswift_small_stage1" \
  --steps "${STAGE3_STEPS:-600}" --time-limit "${STAGE3_TIME:-720}" \
  --threads "${THREADS:-1}" --num-workers "${WORKERS:-1}" \
  --out-dir "$RUN/stage3" --export "$RUN/stage3/tabswift_small"
