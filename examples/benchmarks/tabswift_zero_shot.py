"""TabSwift zero-shot and fine-tuned against simple and strong baselines, plus the early-exit Pareto curve.

    python examples/benchmarks/tabswift_zero_shot.py                      # all P1 datasets with <= 10,000 training rows
    python examples/benchmarks/tabswift_zero_shot.py --datasets phoneme,qsar_biodeg --skip-pareto
    python examples/benchmarks/tabswift_zero_shot.py --report-only

Part 1 (protocol P1, ``benchlib.protocol``; one child process per fit through the
benchmark runner): TABSWIFT (shipped checkpoint, zero-shot), TABSWIFT@finetuned (``fine_tune=True``),
and AutoGluon's LR, KNN, GBM and CAT.  Results append to ``<out>/results.jsonl`` (resumable) and the
report (ranks, PAMA, CD diagram) is rebuilt from it.

Part 2 (the early-exit trade-off): per dataset, one zero-shot TABSWIFT fit on the P1 split, then test
predictions for a grid of exit thresholds τ: test metric, mean exit layer and wall-clock per 1,000
queries -> ``pareto.csv``, ``pareto.md`` and ``pareto.png``.

Why a benchmark and not a test: the numbers describe the shipped checkpoint, which changes whenever it
is retrained; rerun this script then and commit its tables.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

from benchlib.protocol import default_datasets_dir

SMALL_DATASETS = ("qsar_biodeg,seismic_bumps,ames_housing,spambase,phoneme,satimage,telco_churn,cpu_act,"
                  "bank_churn,pol")
MODELS = "TABSWIFT,TABSWIFT@finetuned,LR,KNN,GBM,CAT"
HYPERPARAMETERS = {"TABSWIFT@finetuned": {"fine_tune": True}}
TAUS = (None, 0.99, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.3, 0.0)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=str(default_datasets_dir()))
    ap.add_argument("--datasets", default=SMALL_DATASETS)
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per fit")
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--out", default="examples/benchmarks/results/tabswift_zero_shot")
    ap.add_argument("--skip-pareto", action="store_true")
    ap.add_argument("--skip-fits", action="store_true", help="only the Pareto part")
    ap.add_argument("--report-only", action="store_true")
    return ap.parse_args(argv)


def run_fits(args, out: Path) -> None:
    from benchlib import Task
    from benchlib.runner import run_benchmark

    tasks = [Task(d, m, int(s), args.time_limit, None, HYPERPARAMETERS.get(m, {}))
             for d in args.datasets.split(",") for s in args.seeds.split(",") for m in args.models.split(",")]
    run_benchmark(tasks, args.data_dir, out / "results.jsonl", num_cpus=args.num_cpus)


# ---- part 2: early-exit Pareto curve -------------------------------------------------------------
def pareto_rows(dataset: str, data_dir: str, seed: int, num_cpus: int, time_limit: float):
    from benchlib.p1 import p1_fit

    fit = p1_fit(Path(data_dir) / dataset, {"TABSWIFT": {}}, seed=seed, num_cpus=num_cpus, time_limit=time_limit)
    predictor, model, ds, test = fit.predictor, fit.model, fit.data.dataset, fit.data.test
    ens = model.model
    X_test = model.preprocess(predictor.transform_features(test.drop(columns=[ds.target])))
    y_test = predictor.transform_labels(test[ds.target])
    metric = predictor.eval_metric
    rows = []
    model._ensemble_proba(X_test.iloc[:50])  # builds the context caches: the timing is per-query work only
    for tau in TAUS:
        ens.tau = tau
        t0 = time.perf_counter()
        proba = model._ensemble_proba(X_test)
        seconds = time.perf_counter() - t0
        score = model.score_with_y_pred_proba(y=np.asarray(y_test), y_pred_proba=proba, metric=metric)
        rows.append({"dataset": dataset, "task": ds.task, "metric": metric.name, "tau": "off" if tau is None else tau,
                     "score": float(abs(score) if ds.task == "regression" else score),
                     "mean_exit_layer": ens.last_mean_exit_layer, "n_layers": ens.network.config.n_layers,
                     "predict_s_per_1k": 1000 * seconds / len(X_test)})
    fit.cleanup()
    return rows


def run_pareto(args, out: Path) -> None:
    path = out / "pareto.csv"
    done = set()
    if path.exists():
        with open(path) as f:
            done = {r["dataset"] for r in csv.DictReader(f)}
    for dataset in args.datasets.split(","):
        if dataset in done or not (Path(args.data_dir) / dataset).exists():
            continue
        print(f"[{time.strftime('%H:%M:%S')}] pareto {dataset}", file=sys.stderr)
        rows = pareto_rows(dataset, args.data_dir, int(args.seeds.split(",")[0]), args.num_cpus, args.time_limit)
        new = not path.exists()
        with open(path, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                w.writeheader()
            w.writerows(rows)


def pareto_report(out: Path) -> None:
    path = out / "pareto.csv"
    if not path.exists():
        return
    with open(path) as f:
        rows = list(csv.DictReader(f))
    lines = ["# Early exit: test metric vs mean exit layer (zero-shot TABSWIFT, P1 split, seed 0)", "",
             "score: accuracy (classification) or RMSE (regression, lower is better); `off` = every query runs "
             "every layer; time = predict seconds per 1,000 test rows with the context cached.", "",
             "| dataset | metric | tau | score | mean exit layer | s / 1k rows | time vs off |", "|---|---|---|---:|---:|---:|---:|"]
    base_time = {r["dataset"]: float(r["predict_s_per_1k"]) for r in rows if r["tau"] == "off"}
    for r in rows:
        ratio = float(r["predict_s_per_1k"]) / base_time[r["dataset"]]
        lines.append(f"| {r['dataset']} | {r['metric']} | {r['tau']} | {float(r['score']):.4f} | "
                     f"{float(r['mean_exit_layer']):.2f} / {r['n_layers']} | {float(r['predict_s_per_1k']):.3f} | {ratio:.2f} |")
    (out / "pareto.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        rs = [r for r in rows if r["dataset"] == dataset]
        base = float(next(r for r in rs if r["tau"] == "off")["score"])
        sign = -1 if rs[0]["task"] == "regression" else 1  # plot "relative score change", higher = better
        ax.plot([float(r["mean_exit_layer"]) for r in rs],
                [sign * (float(r["score"]) - base) / abs(base) * 100 for r in rs], marker="o", label=dataset)
    ax.set_xlabel("mean exit layer (compute per query)")
    ax.set_ylabel("test score change vs no early exit (%)")
    ax.axhline(0, color="gray", lw=0.8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "pareto.png", dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        if not args.skip_fits:
            run_fits(args, out)
        if not args.skip_pareto:
            run_pareto(args, out)
    from benchlib.report import write_report

    if (out / "results.jsonl").exists():
        paths = write_report(out)
        print(paths["results.md"].read_text())
    pareto_report(out)
    if (out / "pareto.md").exists():
        print((out / "pareto.md").read_text())


if __name__ == "__main__":
    main()
