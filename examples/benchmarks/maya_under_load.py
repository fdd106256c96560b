"""How much a MAYA fit slows down when another busy process shares the machine, this checkout vs a git ref.

    python examples/benchmarks/maya_under_load.py --baseline 172ea17 --data $AUTOGLUON_MAYA_DATASETS/phoneme

For each version (children started as in ``maya_speed_compare.py``) the same fixed amount of training
(``--epochs`` epochs of the default network, ``--threads`` torch threads as AutoGluon would give it) runs
twice: alone, and beside a busy process (one process spinning a 1-thread matmul loop, what a second
fit or a test run looks like to the OS).  Reported: wall seconds and the slowdown ratio loaded/alone.
The aim was a slowdown of no more than ~2x.  Writes ``load.json`` and ``load.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from maya_speed_compare import (CHILD_SETUP, NUM_LAYERS_HELP, PARAMS, child_args, layers_tag, run_child,  # noqa: E402
                                unpack)

CHILD = CHILD_SETUP + r"""
import inspect
takes_threads = "num_threads" in inspect.signature(train_maya).parameters or "TrainConfig" in globals()
extra = {"num_threads": args["threads"]} if takes_threads else {}
t0 = time.perf_counter()
s = train_maya(FittedMaya(net), x_num=x_num, x_cat=x_cat, y_label=y_t, y_target=y_t, sample_weight=None,
               loss_fn=loss_fn, params=p, device=torch.device("cpu"), budget=TimeBudget(None), seed=0,
               val_score_fn=None, max_epochs=args["epochs"], **extra)
import autogluon_maya
print(json.dumps({"wall_s": time.perf_counter() - t0, "epochs": s["epochs"], "module": autogluon_maya.__file__,
                  "threads_chosen": s.get("threads")}))
"""

BUSY = "import torch, time\ntorch.set_num_threads(1)\na = torch.randn(512, 512)\nwhile True:\n    a @ a\n"


def run(root: Path, args: dict) -> dict:
    out = run_child(root, args, CHILD)
    res = json.loads(out.strip().splitlines()[-1])
    assert res["module"].startswith(str(root)), res["module"]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="172ea17")
    ap.add_argument("--data", default=None,
                    help="dataset folder (default: phoneme in $AUTOGLUON_MAYA_DATASETS)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--num-layers", type=int, default=2, help=NUM_LAYERS_HELP)
    ap.add_argument("--out", default=str(REPO / "examples" / "benchmarks" / "results" / "throughput"))
    args = ap.parse_args()
    if args.data is None:
        from benchlib.protocol import default_datasets_dir
        args.data = str(default_datasets_dir() / "phoneme")
    params = {**PARAMS, "num_layers": args.num_layers}
    tag = layers_tag(args.num_layers)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        versions = {f"baseline {args.baseline}": unpack(args.baseline, Path(tmp)), "this checkout": REPO}
        child = child_args(params, data=args.data, threads=args.threads, epochs=args.epochs)
        for condition in ("alone", "beside a busy process"):
            busy = subprocess.Popen([sys.executable, "-c", BUSY]) if condition != "alone" else None
            try:
                if busy:
                    time.sleep(2)
                for name, root in versions.items():
                    r = run(root, child)
                    rows.append({"version": name, "condition": condition, **r})
                    print(rows[-1], flush=True)
            finally:
                if busy:
                    busy.kill()
    md = [f"MAYA, {args.epochs} epochs of a {args.num_layers}-block network on {Path(args.data).name}, "
          f"{args.threads} threads; wall seconds alone and beside one busy process (a 1-thread matmul loop).", "",
          "| version | alone s | beside a busy process s | slowdown |", "|---|---:|---:|---:|"]
    for name in versions:
        a = next(r["wall_s"] for r in rows if r["version"] == name and r["condition"] == "alone")
        b = next(r["wall_s"] for r in rows if r["version"] == name and r["condition"] != "alone")
        md.append(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f}x |")
    (out / f"load{tag}.json").write_text(json.dumps({"params": params, "args": vars(args), "runs": rows}, indent=2))
    (out / f"load{tag}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
