#!/usr/bin/env bash
# Recipe of the shipped TabSwift checkpoint (README "The shipped TabSwift checkpoint").  Resumable: rerun
# the same command after an interruption.  Needs `pip install -e ".[pretrain]"`.
# Usage: examples/pretrain_tabswift.sh [RUN_DIR]
#   stage 1a: tabicl mix_scm tasks of 256 rows with 2-100 features (a 5,000-step cosine plan, stopped at 800)
#   stage 1b: continued from 1a on narrower tasks (2-40 features), where in-context learning emerges sooner
#   stage 3 : exit heads and per-layer heads, backbone frozen
# Environment knobs: STAGE1B_STEPS, STAGE1B_TIME (s), STAGE3_STEPS, STAGE3_TIME (s), THREADS, WORKERS.
set -euo pipefail
RUN=${1:-runs/tabswift_small}
COMMON=(--model small --prior mix_scm --threads "${THREADS:-1}" --num-workers "${WORKERS:-1}")
python -m autogluon_maya.pretraining --stage 1 "${COMMON[@]}" --seed 0 --steps 5000 --stop-after 800 \
  --checkpoint-every 100 --out-dir "$RUN/stage1" --export "$RUN/stage1/tabswift_small_stage1a"
python -m autogluon_maya.pretraining --stage 1 "${COMMON[@]}" --seed 2 --max-prior-features 40 \
  --init-from "$RUN/stage1/tabswift_small_stage1a" \
  --steps "${STAGE1B_STEPS:-3000}" --time-limit "${STAGE1B_TIME:-2400}" \
  --checkpoint-every 100 --out-dir "$RUN/stage1b" --export "$RUN/stage1b/tabswift_small_stage1b"
python -m autogluon_maya.pretraining --stage 3 "${COMMON[@]}" --seed 1 --max-prior-features 40 \
  --init-from "$RUN/stage1b/tabswift_small_stage1b" \
  --steps "${STAGE3_STEPS:-600}" --time-limit "${STAGE3_TIME:-600}" \
  --out-dir "$RUN/stage3" --export "$RUN/stage3/tabswift_small"
