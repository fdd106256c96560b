"""Stage 3 (early-exit heads, backbone frozen) on a RELEASED-size converted checkpoint: tasks/s on this machine.

The real swift.ckpt is not reachable here, so the backbone is random weights in the released layout
(24 blocks, d=192, 64 registers, 8,203,211 parameters): throughput does not depend on the weights' values.
Steps: write a released-format swift.ckpt -> autogluon-maya-convert -> stage 3 for TIME seconds with the
shipped checkpoint's stage-3 recipe (256-row tasks, 16 per step, mix_scm+random_mlp prior, 1 thread +
1 prior worker) -> summary.csv / summary.json here.

Usage: python examples/benchmarks/released_stage3_speed.py [WORK_DIR] [TIME_SECONDS]
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from autogluon_maya.tabswift.config import RELEASED
from autogluon_maya.tabswift.network import TabSwiftNetwork
from autogluon_maya.tabswift.checkpoints_io.released import released_name

HERE = Path(__file__).resolve().parent / "results" / "pretraining/released_stage3"
RELEASED_DICT = {"max_classes": 10, "max_dim": 100, "embed_dim": 192, "proj_dim": 100, "col_num_blocks": 3,
                 "col_nhead": 4, "col_num_inds": 128, "row_num_blocks": 3, "row_nhead": 8, "row_num_cls": 1,
                 "row_rope_base": 100000.0, "icl_num_blocks": 24, "icl_nhead": 4, "ff_factor": 2, "dropout": 0.0,
                 "activation": "gelu", "norm_first": True, "use_headwise_gate": False,
                 "use_elementwise_gate": True, "register_tokens": 64}


def main(work: Path, seconds: float) -> None:
    work.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    net = TabSwiftNetwork(replace(RELEASED, early_exit=False, label_encoding="scalar"))
    state = {released_name(k): v for k, v in net.state_dict().items()}
    assert len(state) == 353 and sum(v.numel() for v in state.values()) == 8_203_211
    torch.save({"config": RELEASED_DICT, "state_dict": state}, work / "swift.ckpt")
    convert = "from autogluon_maya.tabswift.checkpoints_io.released import main; raise SystemExit(main())"
    subprocess.run([sys.executable, "-c", convert,
                    str(work / "swift.ckpt"), f"{work}/converted/"], check=True)
    load = os.getloadavg()
    t0 = time.time()
    subprocess.run([sys.executable, "-m", "autogluon_maya.pretraining", "--stage", "3", "--model", "released",
                    "--init-from", str(work / "converted" / "swift"), "--prior", "mix_scm+random_mlp",
                    "--max-prior-features", "40", "--threads", "1", "--num-workers", "1", "--seed", "1",
                    "--steps", "10000", "--time-limit", str(seconds), "--log-every", "4",
                    "--checkpoint-every", "100000", "--out-dir", str(work / "stage3")], check=True)
    wall = time.time() - t0
    rows = list(csv.DictReader(open(work / "stage3" / "metrics.csv")))
    steady = rows[1:] or rows  # the first window includes start-up (prior worker, first batch)
    tps = [float(r["tasks_per_s"]) for r in steady]
    summary = {"model": "released size, random weights: 24 blocks, d=192, 4 heads, 64 registers, 8,203,211 backbone "
                        "parameters (+ exit/per-layer heads trained)",
               "recipe": "stage 3, 256-row tasks, 16 tasks/step, both target modes, mix_scm+random_mlp prior "
                         "(<=40 features), 1 torch thread + 1 prior worker",
               "machine": "2 vCPU (shared with other jobs), no GPU", "load_average_at_start": load,
               "load_average_at_end": os.getloadavg(), "time_limit_s": seconds, "wall_s": round(wall, 1),
               "steps": int(rows[-1]["step"]), "tasks": int(rows[-1]["tasks_seen"]),
               "tasks_per_s_windows": tps, "tasks_per_s_median": sorted(tps)[len(tps) // 2],
               "tasks_per_s_mean": sum(tps) / len(tps),
               "model_gflops_per_s_median": sorted(float(r["model_gflops_per_s"]) for r in steady)[len(steady) // 2],
               "data_wait_fraction_mean": sum(float(r["data_wait_fraction"]) for r in steady) / len(steady)}
    per_10k_steps_h = 10_000 * 16 / summary["tasks_per_s_median"] / 3600
    summary["hours_for_paper_stage3_10k_steps_x16_tasks"] = round(per_10k_steps_h, 1)
    (HERE / "summary.json").write_text(json.dumps(summary, indent=2))
    with open(HERE / "metrics.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/released_stage3"),
         float(sys.argv[2]) if len(sys.argv) > 2 else 180)
