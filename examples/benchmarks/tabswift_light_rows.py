"""Does the shipped TabSwift checkpoint earn its slot in the ``light`` preset, and up to how many rows?

    python examples/benchmarks/tabswift_light_rows.py --data-dir <datasets>                 # fit (resumable)
    python examples/benchmarks/tabswift_light_rows.py --report-only                          # report from the results

Decided on the 13 decision tables (never on the 12 tables the ensemble benchmark reports), split seeds 0 and 1,
on validation rows only.  For each (table, seed, training rows N):

* the table is split under P1 (``benchlib.protocol.p1_split``); the training part is subsampled to N rows
  (seeded, stratified for classification); the validation part (at most ``--val-rows`` rows) is the judge; the
  test part is never read;
* one ``TabularPredictor`` fits LightGBM, CatBoost and TabSwift as ``light`` configures them (5 bag folds, one
  level, ``--time-limit`` seconds, no calibration), TabSwift first so that the limit never leaves it out (the
  trees take what is left, the same trees in both ensembles), with TabArena's metric for the problem type
  (ROC-AUC, log loss, RMSE) as ``eval_metric``;
* two weighted ensembles are fitted on the bags' out-of-fold predictions (AutoGluon's ensemble selection):
  the trees alone and the trees with TabSwift.  Their scores on the validation rows, and TabSwift's weight,
  are the result.

Outputs in ``--out`` (default ``examples/benchmarks/results/tabswift_light_rows``): ``results.jsonl`` (one row
per fit; a rerun skips the rows it has), ``report.md`` (per row count: relative validation error with / without
TabSwift, wins, a sign test and Wilcoxon's p-value), ``rows.png`` (relative error against N).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from benchlib.protocol import _safe_strat, default_datasets_dir, load_dataset, p1_split  # noqa: E402
from benchlib.provenance import code_version  # noqa: E402

DECISION_TABLES = ("adult", "bank_marketing", "magic_telescope", "electricity", "california_housing", "diamonds",
                   "pol", "bike_sharing", "waveform_40", "segmentation", "texture", "dna", "car_evaluation")
DEFAULT_SIZES = (500, 1000, 2000, 4000)
DEFAULT_OUT = HERE / "results" / "tabswift_light_rows"
METRICS = {"binary": "roc_auc", "multiclass": "log_loss", "regression": "root_mean_squared_error"}


def subsample(df: pd.DataFrame, n: int, target: str, classification: bool, seed: int) -> pd.DataFrame:
    from sklearn.model_selection import train_test_split

    if len(df) <= n:
        return df
    strat = _safe_strat(df[target]) if classification else None
    part, _ = train_test_split(df, train_size=n, random_state=seed, stratify=strat)
    return part


def one_fit(data_dir: Path, table: str, seed: int, n: int, val_rows: int, num_cpus: int,
            time_limit: float) -> dict | None:
    import autogluon_maya
    from autogluon.tabular import TabularPredictor

    ds = load_dataset(data_dir / table)
    train, val, _ = p1_split(ds, seed)
    if len(train) < n:
        return None
    cls = ds.is_classification
    train = subsample(train, n, ds.target, cls, seed)
    val = subsample(val, val_rows, ds.target, cls, seed)
    light = autogluon_maya.hyperparameters("light", tabswift=False)
    # the shipped checkpoint, zero-shot, as "light" carried it; fitted first, so that the limit never leaves it out
    # (the two ensembles would then be one); the trees take what is left, the same trees in both ensembles
    shipped = {**autogluon_maya.portfolio.LIGHT_TABSWIFT, "checkpoint_path": "shipped"}
    first = {**shipped, "ag_args": {**shipped["ag_args"], "priority": 100}}
    hp = {"GBM": light["GBM"], "CAT": light["CAT"], "TABSWIFT": first}
    path = tempfile.mkdtemp(prefix=f"tsrows_{table}_")
    try:
        predictor = TabularPredictor(label=ds.target, problem_type=ds.task, eval_metric=METRICS[ds.task],
                                     path=path, verbosity=0)
        t0 = time.perf_counter()
        predictor.fit(train, hyperparameters=hp, num_bag_folds=5, num_stack_levels=0, num_cpus=num_cpus,
                      num_gpus=0, fit_weighted_ensemble=True, calibrate=False, time_limit=time_limit)
        fit_s = time.perf_counter() - t0
        names = predictor.model_names()
        trees = [m for m in names if m.startswith(("LightGBM", "CatBoost"))]
        tabswift = [m for m in names if m.startswith("TabSwift")]
        with_name = "WeightedEnsemble_L2"
        without_name = predictor.fit_weighted_ensemble(base_models=trees, name_suffix="_trees")[0]
        lb = predictor.leaderboard(val, silent=True).set_index("model")
        weights = _weights(predictor, with_name)
        sign = -1.0  # AutoGluon's scores are higher-is-better; errors below are positive, lower-is-better
        err = {m: float(sign * lb.loc[m, "score_test"]) if METRICS[ds.task] != "roc_auc"
               else float(1.0 - lb.loc[m, "score_test"]) for m in lb.index}
        oof = {m: float(lb.loc[m, "score_val"]) for m in lb.index}
        if not tabswift:
            raise RuntimeError(f"{table}: TabSwift was not fitted")
        return {"table": table, "seed": seed, "rows": n, "task": ds.task, "metric": METRICS[ds.task],
                "val_rows": len(val), "fit_s": round(fit_s, 1),
                "err_with": err[with_name], "err_without": err[without_name],
                "err_tabswift": err[tabswift[0]],
                "err_best_tree": min(err[m] for m in trees),
                "oof_score": oof, "tabswift_weight": sum(w for m, w in weights.items() if m.startswith("TabSwift")),
                "weights": weights, **code_version()}
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _weights(predictor, name: str) -> dict:
    model = predictor._trainer.load_model(name)
    return {k: float(v) for k, v in model._get_model_weights().items()}


def read_rows(out: Path) -> list:
    path = out / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def rows_table(rows: list) -> str:
    """Per training-row count: pairs, mean relative validation error with / without TabSwift, pairs better /
    worse / the same, the sign test's and (from 6 differing pairs) Wilcoxon's p-values, TabSwift's mean weight
    and the pairs where TabSwift alone validates above the best tree."""
    from scipy.stats import wilcoxon

    from benchlib.stats import p_text, sign_test_p
    from benchlib.tables.common import markdown

    df = pd.DataFrame(rows)
    df["rel"] = df["err_with"] / df["err_without"]
    body = []
    for n, g in df.groupby("rows"):
        diff = g["err_with"] - g["err_without"]
        better, worse = int((diff < -1e-12).sum()), int((diff > 1e-12).sum())
        nz = diff[diff.abs() > 1e-12]
        p_w = p_text(float(wilcoxon(nz).pvalue)) if len(nz) >= 6 else "—"
        alone = int((g["err_tabswift"] < g["err_best_tree"]).sum())
        body.append([str(n), str(len(g)), f"{g['rel'].mean():.4f}", f"{better} / {worse} / {len(g) - better - worse}",
                     p_text(sign_test_p(better, worse)), p_w, f"{g['tabswift_weight'].mean():.2f}",
                     f"{alone} of {len(g)}"])
    return markdown(["training rows", "(table, seed) pairs", "validation error with / without TabSwift (mean)",
                     "better / worse / same", "sign test p", "Wilcoxon p", "TabSwift's weight (mean)",
                     "TabSwift alone above the best tree"], body)


def report(out: Path) -> str:
    df = pd.DataFrame(read_rows(out))
    if df.empty:
        return "no results yet\n"
    df["rel"] = df["err_with"] / df["err_without"]
    text = rows_table(read_rows(out)) + "\n"
    (out / "report.md").write_text("# TabSwift (shipped checkpoint) in the light preset, by training rows\n\n"
                                   "Validation rows only; the 13 decision tables, split seeds 0 and 1.\n\n" + text)
    _plot(df, out / "rows.png")
    return text


def _plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for table, g in df.groupby("table"):
        g = g.groupby("rows")["rel"].mean()
        ax.plot(g.index, g.values, marker="o", lw=0.8, alpha=0.6, label=table)
    mean = df.groupby("rows")["rel"].mean()
    ax.plot(mean.index, mean.values, color="k", lw=2.5, label="mean")
    ax.axhline(1.0, color="grey", ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("training rows")
    ax.set_ylabel("validation error: trees + TabSwift / trees")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--tables", default=",".join(DECISION_TABLES))
    ap.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--val-rows", type=int, default=3000)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=300.0,
                    help="seconds per predictor fit, TabSwift fitted first (default 300: CatBoost's multiclass "
                         "bags otherwise take tens of minutes on 2 busy cores)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        import autogluon_maya

        autogluon_maya.ray_workers_at_normal_priority()  # the bags' Ray fold workers beside other processes
        data_dir = args.data_dir or default_datasets_dir()
        done = {(r["table"], r["seed"], r["rows"]) for r in read_rows(args.out)}
        for n in map(int, args.sizes.split(",")):
            for seed in map(int, args.seeds.split(",")):
                for table in args.tables.split(","):
                    if (table, seed, n) in done:
                        continue
                    row = one_fit(data_dir, table, seed, n, args.val_rows, args.num_cpus, args.time_limit)
                    if row is None:
                        continue
                    with open(args.out / "results.jsonl", "a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(f"{table} seed {seed} rows {n}: with {row['err_with']:.5f} without "
                          f"{row['err_without']:.5f} weight {row['tabswift_weight']:.2f} ({row['fit_s']} s)",
                          flush=True)
    print(report(args.out))


if __name__ == "__main__":
    main()
