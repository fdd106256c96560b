"""A bagged MAYA fit's wall time against its ``time_limit`` beside busy processes, for versions of the code.

    python examples/benchmarks/bagged_under_load.py --baseline ec5ddef --data $AUTOGLUON_MAYA_DATASETS/spambase

AutoGluon fits the folds of a bag in parallel Ray workers.  Two things decide whether such a fit ends within
``time_limit x 1.05 + 2 s`` on a shared machine: the priority of the Ray workers (Ray starts them at niceness
15 unless ``RAY_worker_niceness`` says otherwise) and whether a fold counts its worker's start-up against its
limit.  Each cell is one fit in a fresh process (so Ray starts anew with that cell's environment):

- ``baseline``: the package at ``--baseline`` (a git ref, unpacked into a temporary folder);
- ``this, niceness 15``: this checkout with Ray's own worker niceness;
- ``this``: this checkout with ``autogluon_maya.ray_workers_at_normal_priority()`` (niceness 0);

each alone and beside ``--busy`` processes spinning ``while True: pass``.  The fit: ``--rows`` rows of the
dataset under P1, MAYA with no early stopping and an endless epoch count (the limit binds), 2-fold bagging with
the P1 validation part as the bag holdout, ``--limit`` seconds.  Writes ``results.jsonl``, ``results.md`` and
``wall.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from maya_speed_compare import run_child, unpack  # noqa: E402
SLACK, GRACE_S = 1.05, 2.0

CHILD = r"""
import json, sys, time
args = json.loads(sys.argv[1])
from benchlib.p1 import p1_data, p1_fit
import autogluon_maya
data = p1_data(args["data"], seed=0, max_rows=args["rows"])
fit = p1_fit(data, {"MAYA": {"max_epochs": 100000, "patience": None}}, time_limit=args["limit"], num_cpus=2,
             num_bag_folds=2, use_bag_holdout=True, raise_on_model_failure=False, raise_on_no_models_fitted=False)
names = fit.predictor.model_names()
info = fit.predictor.info()["model_info"]
fold_s = info[names[0]]["fit_time"] if names else None
print(json.dumps({"wall_s": fit.fit_s, "models": names, "fold_fit_s": fold_s, "module": autogluon_maya.__file__}))
fit.cleanup()
"""


def one_fit(root: Path, args: dict, busy: int, niceness: str | None) -> dict:
    # the child gets only the cell's own RAY_worker_niceness (the caller's environment may hold one)
    env = {k: v for k, v in os.environ.items() if k != "RAY_worker_niceness"}
    if niceness is not None:
        env["RAY_worker_niceness"] = niceness
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        stdout = run_child(root, args, CHILD, env=env)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out["module"].startswith(str(root)), out["module"]
    return out


def report(rows: list[dict], out: Path) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    limit = rows[0]["limit"]
    lines = [f"# A bagged MAYA fit beside busy processes ({rows[0]['dataset']}, {rows[0]['rows']} rows, 2 folds, "
             f"time_limit {limit:.0f} s, 2 cores)", "",
             f"Allowed: {limit * SLACK + GRACE_S:.0f} s (time_limit x 1.05 + 2 s). Fold fit s: AutoGluon's fit time "
             "of the bag (its folds' own, after their workers started).", "",
             "| code | busy processes | wall s | within the limit | bag fitted | fold fit s |",
             "|---|---:|---:|---|---|---:|"]
    for r in rows:
        ok = r["wall_s"] <= limit * SLACK + GRACE_S
        fold = "—" if r["fold_fit_s"] is None else f"{r['fold_fit_s']:.1f}"
        lines.append(f"| {r['version']} | {r['busy']} | {r['wall_s']:.1f} | {'yes' if ok else '**no**'} | "
                     f"{'yes' if r['models'] else '**no**'} | {fold} |")
    versions = list(dict.fromkeys(r["version"] for r in rows))
    busy = sorted({r["busy"] for r in rows})
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(versions)
    for i, v in enumerate(versions):
        walls = [next((r["wall_s"] for r in rows if r["version"] == v and r["busy"] == b), float("nan")) for b in busy]
        bars = ax.bar([b + (i - (len(versions) - 1) / 2) * width for b in busy], walls, width, label=v)
        ax.bar_label(bars, fmt="%.0f", fontsize=7)
    ax.axhline(limit * SLACK + GRACE_S, color="black", ls="--", lw=0.8, label="time_limit x 1.05 + 2 s")
    ax.set_xticks(busy, [f"{b} busy" for b in busy])
    ax.set_ylabel("wall seconds of the fit")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "wall.png", dpi=120)
    plt.close(fig)
    text = "\n".join(lines) + "\n"
    (out / "results.md").write_text(text)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="ec5ddef", help="git ref of the version to compare against")
    ap.add_argument("--data", default=None, help="dataset folder (default: spambase in $AUTOGLUON_MAYA_DATASETS)")
    ap.add_argument("--rows", type=int, default=4000, help="rows before the P1 split (2,560 train)")
    ap.add_argument("--limit", type=float, default=40.0)
    ap.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--out", default=str(REPO / "examples" / "benchmarks" / "results" / "bagged_under_load"))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        from benchlib.protocol import default_datasets_dir

        data = args.data or str(default_datasets_dir() / "spambase")
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            versions = [(f"baseline {args.baseline}", unpack(args.baseline, Path(tmp)), None),
                        ("this, niceness 15", REPO, "15"),
                        ("this", REPO, "0")]  # what ray_workers_at_normal_priority() sets
            for busy in args.busy:
                for name, root, nice in versions:
                    res = one_fit(root, {"data": data, "rows": args.rows, "limit": args.limit}, busy, nice)
                    rows.append({"version": name, "busy": busy, "dataset": Path(data).name, "rows": args.rows,
                                 "limit": args.limit, **{k: res[k] for k in ("wall_s", "models", "fold_fit_s")}})
                    print(json.dumps(rows[-1]), flush=True)
        with open(out / "results.jsonl", "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    rows = [json.loads(line) for line in open(out / "results.jsonl")]
    print(report(rows, out))


if __name__ == "__main__":
    main()
