"""Benchmark: does adding MAYA and TabSwift to a GBDT ensemble help, at the same total time budget?

    python examples/benchmarks/mixed_ensemble_benchmark.py                          # 9 datasets x 2 configs, 600 s per fit
    python examples/benchmarks/mixed_ensemble_benchmark.py --datasets phoneme,cpu_act --time-limit 300 --num-cpus 2
    python examples/benchmarks/mixed_ensemble_benchmark.py --preset best --num-gpus 1 --out results/mixed_best
    python examples/benchmarks/mixed_ensemble_benchmark.py --report-only           # rebuild results.md / PNG from results.csv

Two configurations per dataset, each one full AutoGluon fit with the SAME ``--time-limit`` (seconds for
the whole fit, not per model), bagging (``--num-bag-folds``), one stack level and weighted ensembles:

- ``gbdt``:  LightGBM + CatBoost + XGBoost (the GBDT entries of the portfolio, plus XGB);
- ``mixed``: the same GBDTs + MAYA + TabSwift (``autogluon_maya.hyperparameters(--preset)``).

Protocol P1 (``autogluon_maya.common.protocol``): 64/16/20 split; the validation part is the bag
holdout (``use_bag_holdout=True``) on which AutoGluon picks the final model; the score is the test
metric of that model (accuracy, or RMSE for regression).  Datasets default to the public tables in
``$AUTOGLUON_MAYA_DATASETS`` with <= ~10k rows (``--max-rows`` subsamples larger ones, seeded), mixing
binary, multiclass and regression.

Outputs in ``--out``: ``results.csv`` (one row per finished fit, appended), ``results.md`` (per-dataset
table and "mixed wins k of n"), ``mixed_vs_gbdt.png`` (relative test improvement per dataset) and
``logs/<dataset>_<config>.log`` (AutoGluon's output of the latest fit of that pair).
Resumable: a (dataset, config) pair already in results.csv with the same settings and status ``ok`` is
skipped; failed fits are recorded and retried on the next run.  Every fit runs in its own child
process (a crash or out-of-memory kill becomes a failure row, not the end of the run).

This is a benchmark, not a test: the numbers depend on the hardware, the budget and the TabSwift
checkpoint shipped at the time; rerun it when any of them changes.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/stack_with_gbdts.py (fit and family helpers)

DATASETS = ("qsar_biodeg,seismic_bumps,ames_housing,spambase,phoneme,satimage,telco_churn,cpu_act,letter")
CONFIGS = ("gbdt", "mixed")
GBDT_KEYS = ("GBM", "CAT", "XGB")
#: settings that identify a result: a pair is "done" only for the same values of these
SETTINGS = ("preset", "time_limit", "max_rows", "seed", "num_bag_folds", "num_stack_levels", "smoke")
FIELDS = ["dataset", "config", "status", "task", "metric", "test_score", "val_score", "best_model", "n_models",
          "nn_weight", "weights", "models", "fit_s", "n_train", "n_val", "n_test", *SETTINGS, "num_cpus",
          "num_gpus", "error", "finished"]
CHILD_GRACE_S = 600


def config_hyperparameters(config: str, preset: str, smoke: bool) -> dict:
    from stack_with_gbdts import portfolio

    hp = portfolio(preset, smoke=smoke)  # the preset + XGB (+ tiny sizes with smoke)
    if config == "gbdt":
        return {k: v for k, v in hp.items() if k in GBDT_KEYS}
    if config == "mixed":
        return hp
    raise ValueError(f"unknown config {config!r}; choose from {', '.join(CONFIGS)}")


# ---- one fit (runs in a child process) -----------------------------------------------------------------
def one_fit(spec: dict) -> dict:
    import autogluon_maya  # noqa: F401  (registers MAYA and TABSWIFT)
    from autogluon_maya.benchmarking.p1 import p1_data
    from autogluon_maya.common.protocol import p1_metric
    from stack_with_gbdts import family, fit_stack, test_leaderboard

    data = p1_data(Path(spec["data_dir"]) / spec["dataset"], seed=spec["seed"], max_rows=spec["max_rows"])
    ds, train, val, test = data.dataset, data.train, data.val, data.test
    hp = config_hyperparameters(spec["config"], spec["preset"], spec["smoke"])
    path = tempfile.mkdtemp(prefix=f"mixed_bench_{ds.name}_{spec['config']}_")
    t0 = time.time()
    predictor = fit_stack(train, val, ds.target, ds.task, hp, spec["time_limit"], spec["num_bag_folds"],
                          spec["num_stack_levels"], spec["num_cpus"], spec["num_gpus"], path=str(Path(path) / "ag"),
                          verbosity=2)
    fit_s = time.time() - t0
    lb = test_leaderboard(predictor, test, ds.task).set_index("model")
    best = predictor.model_best  # chosen on validation (the bag holdout), as a user would get it
    model = predictor._trainer.load_model(best)
    weights = model._get_model_weights() if hasattr(model, "_get_model_weights") else {best: 1.0}
    # share of the final weighted ensemble on MAYA/TabSwift models
    nn_weight = sum(w for m, w in weights.items() if family(m) in ("MAYA", "TabSwift"))
    row = {"task": ds.task, "metric": p1_metric(ds.task), "test_score": float(lb.loc[best, "test"]),
           "val_score": float(lb.loc[best, "val"]), "best_model": best, "n_models": len(lb),
           "nn_weight": round(float(nn_weight), 4),
           "weights": json.dumps({m: round(float(w), 4) for m, w in weights.items()}), "models": " ".join(lb.index),
           "fit_s": round(fit_s, 1), "n_train": len(train),
           "n_val": len(val), "n_test": len(test)}
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    return row


def run_child(spec: dict, log_path: Path) -> dict:
    """Run ``one_fit`` in a fresh Python process (its output goes to ``log_path``); a crash or timeout
    becomes an error row."""
    with tempfile.TemporaryDirectory(prefix="mixed_bench_child_") as tmp:
        spec_path, result_path = Path(tmp, "spec.json"), Path(tmp, "result.json")
        spec_path.write_text(json.dumps(spec))
        timeout = 2 * spec["time_limit"] + CHILD_GRACE_S  # AutoGluon's time limit is soft
        with open(log_path, "w") as log:
            try:
                proc = subprocess.run([sys.executable, __file__, "--_child", str(spec_path), str(result_path)],
                                      timeout=timeout, stdout=log, stderr=subprocess.STDOUT)
            except subprocess.TimeoutExpired:
                return {"status": "error", "error": f"timeout after {timeout:.0f} s (log: {log_path})"}
        if result_path.exists():
            return json.loads(result_path.read_text())
        tail = log_path.read_text()[-1500:]
        return {"status": "error", "error": f"child exited with {proc.returncode}: {tail}"}


def _child_main(spec_path: str, result_path: str) -> None:
    import traceback

    spec = json.loads(Path(spec_path).read_text())
    try:
        row = {"status": "ok", **one_fit(spec)}
    except Exception as e:  # recorded, retried on the next run
        row = {"status": "error", "error": f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"}
    Path(result_path).write_text(json.dumps(row, default=str))


# ---- results file ----------------------------------------------------------------------------------------
def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _key(row: dict) -> tuple:
    return (row["dataset"], row["config"], *(str(row[s]) for s in SETTINGS))


def append_row(path: Path, row: dict) -> None:
    if path.exists():
        with open(path, newline="") as f:
            header = next(csv.reader(f), None)
        if header != FIELDS:  # written by an older version of this script: rewrite with today's columns
            old = read_rows(path)
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore", restval="")
                w.writeheader()
                w.writerows(old)
    new = not path.exists()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        if new:
            w.writeheader()
        w.writerow(row)


def settings_of(args) -> dict:
    return {"preset": args.preset, "time_limit": float(args.time_limit), "max_rows": args.max_rows,
            "seed": args.seed, "num_bag_folds": args.num_bag_folds, "num_stack_levels": args.num_stack_levels,
            "smoke": bool(args.smoke)}


def run(args, out: Path) -> None:
    results = out / "results.csv"
    settings = settings_of(args)
    done = {_key(r) for r in read_rows(results) if r["status"] == "ok"}
    for dataset in args.datasets.split(","):
        if not (Path(args.data_dir) / dataset / "meta.json").exists():
            print(f"skip {dataset}: not found in {args.data_dir}", file=sys.stderr)
            continue
        for config in args.configs.split(","):
            row = {"dataset": dataset, "config": config, **settings}
            if _key(row) in done:
                print(f"[{time.strftime('%H:%M:%S')}] {dataset} / {config}: done, skipped", file=sys.stderr)
                continue
            print(f"[{time.strftime('%H:%M:%S')}] {dataset} / {config}: fitting ({args.time_limit:.0f} s budget)",
                  file=sys.stderr, flush=True)
            spec = {**row, "data_dir": str(args.data_dir), "num_cpus": args.num_cpus, "num_gpus": args.num_gpus}
            (out / "logs").mkdir(exist_ok=True)
            result = run_child(spec, out / "logs" / f"{dataset}_{config}.log")
            row.update(result, num_cpus=args.num_cpus, num_gpus=args.num_gpus,
                       finished=time.strftime("%Y-%m-%d %H:%M:%S"))
            append_row(results, row)
            msg = (f"test {row['metric']} {row['test_score']:.4f} ({row['best_model']}, {row['fit_s']} s)"
                   if row["status"] == "ok" else f"FAILED: {str(row['error']).splitlines()[0][:200]}")
            print(f"[{time.strftime('%H:%M:%S')}] {dataset} / {config}: {msg}", file=sys.stderr, flush=True)


# ---- report ----------------------------------------------------------------------------------------------
def compare(rows: list[dict], settings: dict | None = None) -> list[dict]:
    """One entry per dataset with both configs finished: scores, relative improvement, winner.

    With ``settings``, only rows run with those settings count; without, the latest ok row per pair."""
    latest = {}
    for r in rows:
        if r["status"] != "ok":
            continue
        if settings is not None and any(str(r[k]) != str(v) for k, v in settings.items()):
            continue
        latest[(r["dataset"], r["config"])] = r
    out = []
    for dataset in dict.fromkeys(d for d, _ in latest):
        g, m = latest.get((dataset, "gbdt")), latest.get((dataset, "mixed"))
        if g is None or m is None:
            continue
        lower_better = g["metric"] == "root_mean_squared_error"
        gs, ms = float(g["test_score"]), float(m["test_score"])
        improvement = (gs - ms if lower_better else ms - gs) / abs(gs) * 100 if gs else 0.0
        winner = "tie" if ms == gs else ("mixed" if improvement > 0 else "gbdt")
        out.append({"dataset": dataset, "task": g["task"], "metric": g["metric"], "n_train": g["n_train"],
                    "gbdt": gs, "mixed": ms, "improvement_pct": improvement, "winner": winner,
                    "nn_weight": float(m["nn_weight"] or 0), "gbdt_best": g["best_model"],
                    "mixed_best": m["best_model"],
                    "gbdt_fit_s": float(g["fit_s"]), "mixed_fit_s": float(m["fit_s"]),
                    "time_limit": g["time_limit"], "preset": m["preset"], "smoke": m["smoke"]})
    return out


def write_report(out: Path, settings: dict | None = None) -> str:
    rows = read_rows(out / "results.csv")
    comp = compare(rows, settings)
    n = len(comp)
    wins = sum(c["winner"] == "mixed" for c in comp)
    ties = sum(c["winner"] == "tie" for c in comp)
    failed = sorted({(r["dataset"], r["config"]) for r in rows if r["status"] != "ok"}
                    - {(r["dataset"], r["config"]) for r in rows if r["status"] == "ok"})
    s = settings or (rows[-1] if rows else {})
    lines = ["# GBDT-only vs GBDTs + MAYA + TabSwift at the same time budget", "",
             f"Protocol P1 (64/16/20, seed {s.get('seed', '?')}), one AutoGluon fit per cell with "
             f"{s.get('num_bag_folds', '?')}-fold bagging, {s.get('num_stack_levels', '?')} stack level(s) and "
             f"weighted ensembles, {s.get('time_limit', '?')} s per fit for both configurations; portfolio "
             f"preset `{s.get('preset', '?')}`{' (SMOKE: tiny model sizes)' if str(s.get('smoke')) == 'True' else ''}. "
             "Score: test accuracy (higher is better) or RMSE (lower is better) of the model AutoGluon picks on "
             "validation. `improvement` is relative, positive = the mixed ensemble is better. `NN weight`: share "
             "of the final weighted ensemble on MAYA/TabSwift models (0 = the stacker ignored them at the top "
             "level; they can still feed the L2 models).", "",
             f"**mixed wins {wins} of {n}**" + (f" ({ties} tie{'s' if ties != 1 else ''}, {n - wins - ties} "
                                                 f"loss{'es' if n - wins - ties != 1 else ''})" if n else ""), "",
             "| dataset | task | train rows | metric | GBDT-only | mixed | improvement | winner | NN weight | "
             "best model (mixed) | fit s (gbdt / mixed) |",
             "|---|---|---:|---|---:|---:|---:|---|---:|---|---:|"]
    for c in comp:
        metric = "RMSE" if c["metric"] == "root_mean_squared_error" else "accuracy"
        g, m = f"{c['gbdt']:.4f}", f"{c['mixed']:.4f}"
        if c["winner"] == "mixed":
            m = f"**{m}**"
        elif c["winner"] == "gbdt":
            g = f"**{g}**"
        lines.append(f"| {c['dataset']} | {c['task']} | {c['n_train']} | {metric} | {g} | {m} | "
                     f"{c['improvement_pct']:+.2f}% | {c['winner']} | {c['nn_weight']:.2f} | {c['mixed_best']} | "
                     f"{c['gbdt_fit_s']:.0f} / {c['mixed_fit_s']:.0f} |")
    if failed:
        lines += ["", "Failed (no ok result yet): " + ", ".join(f"{d}/{c}" for d, c in failed)]
    text = "\n".join(lines) + "\n"
    (out / "results.md").write_text(text)
    plot(comp, out / "mixed_vs_gbdt.png", f"mixed wins {wins} of {n}")
    return text


def plot(comp: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.5, 0.8 * len(comp) + 2), 4.5))
    if not comp:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no dataset with both configurations finished yet", ha="center", va="center")
    else:
        vals = [c["improvement_pct"] for c in comp]
        colors = ["tab:green" if c["winner"] == "mixed" else ("tab:gray" if c["winner"] == "tie" else "tab:red")
                  for c in comp]
        labels = [f"{c['dataset']}\n({'RMSE' if c['metric'] == 'root_mean_squared_error' else 'acc'})" for c in comp]
        bars = ax.bar(range(len(comp)), vals, color=colors)
        ax.bar_label(bars, labels=[f"{v:+.2f}%" for v in vals], padding=2, fontsize=7)
        ax.set_xticks(range(len(comp)), labels, fontsize=7, rotation=30, ha="right")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_ylabel("test improvement of mixed\nover GBDT-only (relative, %)")
        lim = max(abs(v) for v in vals) or 1.0
        ax.set_ylim(-1.3 * lim, 1.3 * lim)
    ax.set_title(f"GBDTs + MAYA + TabSwift vs GBDT-only at the same time budget\n{title} "
                 "(green: mixed better, red: worse, gray: tie)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_args(argv=None):
    from autogluon_maya.common.protocol import default_datasets_dir
    from autogluon_maya.portfolio import PRESETS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=str(default_datasets_dir()))
    ap.add_argument("--datasets", default=DATASETS, help="comma-separated folder names (default: %(default)s)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="subset of gbdt,mixed")
    ap.add_argument("--preset", default="light", choices=sorted(PRESETS), help="portfolio for the mixed config")
    ap.add_argument("--time-limit", type=float, default=600, help="seconds per fit (whole AutoGluon fit)")
    ap.add_argument("--max-rows", type=int, default=10000, help="subsample larger tables (seeded)")
    ap.add_argument("--num-bag-folds", type=int, default=5)
    ap.add_argument("--num-stack-levels", type=int, default=1)
    ap.add_argument("--num-cpus", type=int, default=None, help="default: all cores")
    ap.add_argument("--num-gpus", type=float, default=None, help="default: AutoGluon detects them")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="tiny model sizes (checks the script, not the models)")
    ap.add_argument("--out", default="examples/benchmarks/results/mixed_ensemble")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    for c in args.configs.split(","):
        if c not in CONFIGS:
            ap.error(f"unknown config {c!r}; choose from {', '.join(CONFIGS)}")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        run(args, out)
    print(write_report(out, None if args.report_only else settings_of(args)))
    print(f"wrote {out / 'results.csv'}, {out / 'results.md'}, {out / 'mixed_vs_gbdt.png'}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--_child":
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        _child_main(sys.argv[2], sys.argv[3])
    else:
        main()
