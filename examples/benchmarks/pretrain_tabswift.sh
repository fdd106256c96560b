#!/usr/bin/env bash
# TabSwift pretraining.  Needs `pip install -e ".[pretrain]"`.
#
# v2 -- the campaign that accumulates over days (examples/benchmarks/results/pretraining/campaign.md):
#   examples/benchmarks/pretrain_tabswift.sh campaign        # start/continue in the background (1 torch thread)
#   examples/benchmarks/pretrain_tabswift.sh status          # progress
#   examples/benchmarks/pretrain_tabswift.sh export NAME [--leg legN]  # stage 3 on a leg's weights -> a candidate
#   examples/benchmarks/pretrain_tabswift.sh judge --candidate-results A --shipped-results B  # the adoption rule
#   examples/benchmarks/pretrain_tabswift.sh adopt NAME      # candidate -> the package's checkpoint (after judge + tests)
#   examples/benchmarks/pretrain_tabswift.sh snapshot        # logs into the repo (to commit), latest weights to runs/
# (all call examples/benchmarks/pretraining_campaign.py; LOG=runs/campaign.log by default)
#
# v1 -- the recipe of the shipped checkpoint (README "The shipped TabSwift checkpoint"), resumable: rerun
# the same command after an interruption.
# Usage: examples/benchmarks/pretrain_tabswift.sh [RUN_DIR]
#   stage 1a: tabicl mix_scm tasks of 256 rows with 2-100 features (a 5,000-step cosine plan, stopped at 800)
#   stage 1b: continued from 1a on narrower tasks (2-40 features; a 3,000-step plan, stopped at 700)
#   stage 1c: continued from 1b on a curriculum: every other batch from the easy random-MLP prior
#             (regression MSE stayed ~0.99 on mix_scm alone after 1,500 steps: no in-context learning yet)
#   stage 3 : exit heads and per-layer heads, backbone frozen
# Environment knobs: STAGE1C_STEPS, STAGE1C_TIME (s), STAGE3_STEPS, STAGE3_TIME (s), THREADS, WORKERS.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
case "${1:-}" in
  campaign)
    mkdir -p "$HERE/../runs"
    LOG=${LOG:-$HERE/../runs/campaign.log}
    nohup python "$HERE/pretraining_campaign.py" run "${@:2}" >> "$LOG" 2>&1 &
    echo "campaign running in the background (pid $!), log: $LOG"
    exit 0 ;;
  status|export|snapshot|evaluate|judge|adopt)
    exec python "$HERE/pretraining_campaign.py" "$@" ;;
esac
RUN=${1:-runs/tabswift_small}
COMMON=(--model small --prior mix_scm --threads "${THREADS:-1}" --num-workers "${WORKERS:-1}")
python -m autogluon_maya.pretraining --stage 1 "${COMMON[@]}" --seed 0 --steps 5000 --stop-after 800 \
  --checkpoint-every 100 --out-dir "$RUN/stage1" --export "$RUN/stage1/tabswift_small_stage1a"
python -m autogluon_maya.pretraining --stage 1 "${COMMON[@]}" --seed 2 --max-prior-features 40 \
  --init-from "$RUN/stage1/tabswift_small_stage1a" \
  --steps 3000 --stop-after 700 \
  --checkpoint-every 100 --out-dir "$RUN/stage1b" --export "$RUN/stage1b/tabswift_small_stage1b"
python -m autogluon_maya.pretraining --stage 1 --model small --prior mix_scm+random_mlp \
  --threads "${THREADS:-1}" --num-workers "${WORKERS:-1}" --seed 3 --max-prior-features 40 \
  --init-from "$RUN/stage1b/tabswift_small_stage1b" \
  --steps "${STAGE1C_STEPS:-2000}" --time-limit "${STAGE1C_TIME:-1500}" \
  --checkpoint-every 100 --out-dir "$RUN/stage1c" --export "$RUN/stage1c/tabswift_small_stage1c"
python -m autogluon_maya.pretraining --stage 3 --model small --prior mix_scm+random_mlp \
  --threads "${THREADS:-1}" --num-workers "${WORKERS:-1}" --seed 1 --max-prior-features 40 \
  --init-from "$RUN/stage1c/tabswift_small_stage1c" \
  --steps "${STAGE3_STEPS:-600}" --time-limit "${STAGE3_TIME:-600}" \
  --out-dir "$RUN/stage3" --export "$RUN/stage3/tabswift_small"
