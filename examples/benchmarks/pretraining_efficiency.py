"""Which pretraining settings buy the most held-out loss per CPU-second?

Each *arm* is a stage-2 run (``autogluon_maya.pretraining``) given the same wall-clock budget, one arm
after another in this one invocation, each in its own process (so thread and worker settings do not
leak between arms).  After its budget an arm's weights are scored on one fixed held-out set of
stage-2 tasks (drawn once, from a seed no arm trains on; both target modes, CE + MSE + MAE on the
query rows) -- the same tasks for every arm, so the comparison is paired.

Arms (all: mix_scm+random_mlp prior, 16..2,048 rows per task drawn per batch, 4,096 rows per step,
features to F_max, 30 % of tasks with noise columns):
  base         shipped checkpoint's weights, 1 torch thread, 1 prior worker, both target modes
  threads2     2 torch threads
  workers0     the prior generated in the training process (no worker)
  one_mode     one target mode drawn per task (half the forward/backward per task)
  curriculum   row ceiling ramped 16 -> 2,048 over the first 60 steps
  scratch_*    model sizes from random initialization at equal time: 4x96, 6x128 (small), 8x160

Usage (about 8 x (budget + ~40 s)):
    python examples/benchmarks/pretraining_efficiency.py --seconds 200 --out examples/benchmarks/results/pretraining
The machine this ran on had 2 cores shared with other jobs: read tasks/s as ratios between arms of
one run, and expect a few percent of noise in both columns.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

from autogluon_maya.pretraining.config import PretrainConfig
from autogluon_maya.pretraining.data import PriorBatches
from autogluon_maya.pretraining.losses import backbone_loss
from autogluon_maya.pretraining.trainer import build_network, task_shape
from autogluon_maya.tabswift.config import SMALL, TabSwiftConfig
from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint

STAGE2 = dict(stage=2, prior="mix_scm+random_mlp", rows=2048, min_rows=16, rows_per_step=4096, batch_size=16,
              noise_feature_prob=0.3, lr=2e-4, warmup_fraction=0.0, steps=100_000, seed=11,
              checkpoint_every=10 ** 9, log_every=10, threads=1, num_workers=1)
SIZES = {"scratch_4x96": dict(n_layers=4, d_model=96), "scratch_6x128": {}, "scratch_8x160": dict(n_layers=8, d_model=160)}
ARMS = {
    "base": dict(init_from=str(SHIPPED_CHECKPOINT)),
    "threads2": dict(init_from=str(SHIPPED_CHECKPOINT), threads=2),
    "workers0": dict(init_from=str(SHIPPED_CHECKPOINT), num_workers=0),
    "one_mode": dict(init_from=str(SHIPPED_CHECKPOINT), target_mode="one"),
    "curriculum": dict(init_from=str(SHIPPED_CHECKPOINT), rows_ramp_steps=60),
    **{name: dict(model=f"@{name}", lr=5e-4, warmup_fraction=0.0005) for name in SIZES},
}


def held_out_batches(n: int = 8, seed: int = 999):
    cfg = PretrainConfig(**{**STAGE2, "seed": seed})
    shape = task_shape(cfg, build_network(PretrainConfig(model="small")))
    data = PriorBatches(cfg.prior, shape, seed)
    return [data[i] for i in range(n)]


@torch.no_grad()
def held_out_loss(ckpt, batches) -> dict:
    net = load_checkpoint(ckpt).eval()
    parts = [backbone_loss(net, b) for b in batches]
    return {k: sum(float(p[k]) for p in parts) / len(parts) for k in ("loss", "ce", "mse", "mae")}


def run_arm(name: str, seconds: float, work: Path) -> dict:
    kw = {**STAGE2, **ARMS[name]}
    if kw.get("model", "").startswith("@"):
        path = work / f"{name}.json"
        path.write_text(json.dumps(TabSwiftConfig(**{**SMALL.to_dict(), **SIZES[name]}).to_dict()))
        kw["model"] = str(path)
    out = work / name
    args = [sys.executable, "-m", "autogluon_maya.pretraining", "--out-dir", str(out), "--time-limit", str(seconds),
            "--export", str(out / "weights")]
    for k, v in kw.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    t0 = time.time()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    summary = json.loads((out / "summary.json").read_text())
    with open(out / "metrics.csv") as f:
        m = list(csv.DictReader(f))
    hours = summary["train_hours"] * 3600
    return {"arm": name, "params": summary["parameters"], "steps": summary["steps_done"],
            "tasks": summary["tasks_seen"], "train_s": round(hours, 1), "wall_s": round(time.time() - t0, 1),
            "tasks_per_s": round(summary["tasks_seen"] / hours, 2),
            "rows_per_s": round(sum(float(r["mean_rows"]) * float(r["tasks_per_s"]) / 1 for r in m) / max(len(m), 1), 0),
            "gflops_per_s": round(sum(float(r["model_gflops_per_s"]) for r in m) / max(len(m), 1), 1),
            "data_wait": round(sum(float(r["data_wait_fraction"]) for r in m) / max(len(m), 1), 3),
            "weights": str(out / "weights")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=200, help="training wall time per arm")
    p.add_argument("--arms", default=",".join(ARMS))
    p.add_argument("--work-dir", default="runs/efficiency")
    p.add_argument("--out", default="examples/benchmarks/results/pretraining")
    a = p.parse_args()
    torch.set_num_threads(1)
    work, out = Path(a.work_dir), Path(a.out)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    batches = held_out_batches()
    shipped = held_out_loss(SHIPPED_CHECKPOINT, batches)
    print("shipped checkpoint, held-out:", shipped, flush=True)
    rows = []
    for name in a.arms.split(","):
        r = run_arm(name, a.seconds, work)
        r.update({f"held_out_{k}": round(v, 4) for k, v in held_out_loss(r.pop("weights"), batches).items()})
        rows.append(r)
        print(r, flush=True)
        with open(out / "efficiency.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    lines = [f"Held-out loss of the shipped checkpoint before any arm: {shipped['loss']:.4f} "
             f"(CE {shipped['ce']:.4f}, MSE {shipped['mse']:.4f}, MAE {shipped['mae']:.4f}).", "",
             "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(str(v) for v in r.values()) + " |" for r in rows]
    (out / "efficiency_table.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
