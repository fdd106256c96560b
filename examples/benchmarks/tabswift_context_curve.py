"""Zero-shot TabSwift score against the number of context rows.

For each dataset: the P1 split (seed 0), then TABSWIFT fitted through AutoGluon with
``max_context_rows`` = 256 / 512 / 1,024 / 2,048 (the training rows subsampled, stratified for
classification, by the ensemble's own seeded subsampling) and scored on the whole P1 test split.
More context should never hurt an in-context learner; the aim was a non-decreasing curve
from 256 to 2,048 rows on at least 4 of 5 datasets.

    python examples/benchmarks/tabswift_context_curve.py                       # shipped checkpoint
    python examples/benchmarks/tabswift_context_curve.py --member-seeds 0,1,2  # mean over 3 ensemble seeds

One ensemble seed is a noisy measurement: the members' feature permutations move a dataset's score by
several points (spambase 0.889-0.923 over 5 seeds of the same checkpoint), as much as the steps between
context sizes.  ``--member-seeds`` averages over seeds (TABSWIFT's ``random_seed``).
    python examples/benchmarks/tabswift_context_curve.py --checkpoint runs/campaign/candidates/c1/tabswift_small \\
        --out examples/benchmarks/results/pretraining/context_curve_c1
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

DATASETS = "phoneme,spambase,bank_churn,cpu_act,pol"
SIZES = "256,512,1024,2048"


def score_at(dataset: str, data_dir: str, rows: int, checkpoint, num_cpus: int, member_seed: int = 0) -> dict:
    from benchlib.p1 import p1_fit

    params = {"max_context_rows": rows, "random_seed": member_seed,
              **({"checkpoint_path": checkpoint} if checkpoint else {})}
    t0 = time.perf_counter()
    fit = p1_fit(Path(data_dir) / dataset, {"TABSWIFT": params}, seed=0, num_cpus=num_cpus)
    predictor, ds, train = fit.predictor, fit.data.dataset, fit.data.train
    score = predictor.evaluate(fit.data.test, silent=True)[predictor.eval_metric.name]
    fit.cleanup()
    return {"dataset": dataset, "task": ds.task, "metric": predictor.eval_metric.name, "context_rows": rows,
            "member_seed": member_seed,
            "train_rows": len(train), "score": abs(float(score)), "higher_is_better": ds.task != "regression",
            "seconds": round(time.perf_counter() - t0, 1)}


def mean_over_seeds(rows):
    """One row per (dataset, context size): the score averaged over the ensemble seeds measured."""
    groups = {}
    for r in rows:
        groups.setdefault((r["dataset"], int(r["context_rows"])), []).append(r)
    return [{**rs[0], "score": sum(float(r["score"]) for r in rs) / len(rs), "n_seeds": len(rs)}
            for rs in groups.values()]


def report(rows, out: Path) -> None:
    rows = mean_over_seeds(rows)
    seeds = sorted({int(r["n_seeds"]) for r in rows})
    by = {}
    for r in rows:
        by.setdefault(r["dataset"], []).append(r)
    lines = ["| dataset | metric | " + " | ".join(f"{r['context_rows']} rows" for r in next(iter(by.values())))
             + " | non-decreasing |", "|---|---|" + "---:|" * len(next(iter(by.values()))) + "---|"]
    n_ok = 0
    for name, rs in by.items():
        rs = sorted(rs, key=lambda r: int(r["context_rows"]))
        s = [float(r["score"]) for r in rs]
        better = (lambda a, b: b >= a) if str(rs[0]["higher_is_better"]) == "True" else (lambda a, b: b <= a)
        ok = all(better(a, b) for a, b in zip(s, s[1:]))
        n_ok += ok
        lines.append(f"| {name} | {rs[0]['metric']} | " + " | ".join(f"{v:.4f}" for v in s) + f" | {'yes' if ok else 'no'} |")
    lines.append(f"\nScores are means over {'/'.join(map(str, seeds))} ensemble seed(s). "
                 f"Non-decreasing from 256 to 2,048 rows on {n_ok} of {len(by)} datasets "
                 "(for RMSE: non-increasing). The aim was at least 4 of 5.")
    (out / "context_curve.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    from benchlib.protocol import default_datasets_dir

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(default_datasets_dir()))
    p.add_argument("--datasets", default=DATASETS)
    p.add_argument("--sizes", default=SIZES)
    p.add_argument("--checkpoint", default=None, help="TabSwift checkpoint (default: the shipped one)")
    p.add_argument("--num-cpus", type=int, default=1)
    p.add_argument("--member-seeds", default="0", help="TABSWIFT random_seed values to average over")
    p.add_argument("--out", default="examples/benchmarks/results/pretraining/context_curve")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "context_curve.csv"
    rows = list(csv.DictReader(open(path))) if path.exists() else []
    done = {(r["dataset"], int(r["context_rows"]), int(r.get("member_seed") or 0)) for r in rows}
    for dataset in a.datasets.split(","):
        for size in map(int, a.sizes.split(",")):
            for seed in map(int, a.member_seeds.split(",")):
                if (dataset, size, seed) in done:
                    continue
                r = score_at(dataset, a.data_dir, size, a.checkpoint, a.num_cpus, seed)
                print(r, flush=True)
                rows.append(r)
                with open(path, "w", newline="") as f:
                    w = csv.DictWriter(f, fieldnames=list(r), extrasaction="ignore")
                    w.writeheader()
                    w.writerows(rows)
    report(rows, out)


if __name__ == "__main__":
    main()
