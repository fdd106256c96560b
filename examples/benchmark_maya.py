"""Protocol P1 benchmark of MAYA against AutoGluon's GBM, CAT and NN_TORCH (one fit per model).

    python examples/benchmark_maya.py --datasets california_housing,telco_churn,adult,bank_churn \
        --models MAYA,GBM,CAT,NN_TORCH --seed 0 --time-limit 600 --out examples/results/maya_p1

P1: 64/16/20 split (stratified for classification), validation part as ``tuning_data``, test metric
accuracy or RMSE.  Every model gets the same time budget.  Results are appended to ``results.csv``
(rerunning skips finished (dataset, model, seed) rows) and summarized in ``results.md``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import pandas as pd

import autogluon_maya  # noqa: F401
from autogluon.tabular import TabularPredictor

from autogluon_maya.common.protocol import default_datasets_dir, load_dataset, p1_metric, p1_split


def run_one(ds, model: str, seed: int, time_limit: float, num_cpus: int) -> dict:
    train, val, test = p1_split(ds, seed)
    path = tempfile.mkdtemp(prefix=f"bench_{ds.name}_{model}_")
    try:
        predictor = TabularPredictor(label=ds.target, problem_type=ds.task, eval_metric=p1_metric(ds.task),
                                     path=path, verbosity=0)
        t0 = time.time()
        predictor.fit(train, tuning_data=val, hyperparameters={model: {}}, time_limit=time_limit,
                      fit_weighted_ensemble=False, num_cpus=num_cpus, num_gpus=0)
        fit_s = time.time() - t0
        names = predictor.model_names()
        if not names:
            return {"status": "no model trained"}
        t0 = time.time()
        y_pred = predictor.predict(test, model=names[0])
        pred_s = time.time() - t0
        score = predictor.evaluate_predictions(test[ds.target], y_pred, silent=True)[p1_metric(ds.task)]
        val_score = float(predictor.leaderboard(silent=True).score_val.iloc[0])
        value = abs(score) if ds.task == "regression" else score  # RMSE reported positive
        return {"status": "ok", "test_metric": value, "val_score": val_score, "fit_s": round(fit_s, 1),
                "predict_s_per_1k": round(1000 * pred_s / len(test), 4), "n_train": len(train)}
    except Exception as e:  # a failing model is recorded, not fatal
        return {"status": f"error: {type(e).__name__}: {e}"[:300]}
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_markdown(df: pd.DataFrame, out: Path):
    ok = df[df.status == "ok"]
    lines = ["| dataset | metric | " + " | ".join(sorted(ok.model.unique())) + " |",
             "|---|---|" + "---:|" * ok.model.nunique()]
    for name, g in ok.groupby("dataset"):
        metric = g.metric.iloc[0]
        best = g.test_metric.min() if metric == "rmse" else g.test_metric.max()
        cells = []
        for m in sorted(ok.model.unique()):
            r = g[g.model == m]
            if r.empty:
                cells.append("-")
                continue
            v = r.test_metric.mean()
            s = f"{v:.4f} ({r.fit_s.mean():.0f}s)"
            cells.append(f"**{s}**" if v == best else s)
        lines.append(f"| {name} | {metric} | " + " | ".join(cells) + " |")
    failed = df[df.status != "ok"]
    if len(failed):
        lines += ["", "Failures:"] + [f"- {r.dataset}/{r.model}: {r.status}" for r in failed.itertuples()]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=str(default_datasets_dir()))
    ap.add_argument("--datasets", default="california_housing,telco_churn,adult,bank_churn")
    ap.add_argument("--models", default="MAYA,GBM,CAT,NN_TORCH")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=600, help="seconds per model fit")
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--max-rows", type=int, default=None, help="subsample larger datasets (recorded)")
    ap.add_argument("--out", default="examples/results/maya_p1")
    args = ap.parse_args()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    csv = out / "results.csv"
    df = pd.read_csv(csv) if csv.exists() else pd.DataFrame(columns=["dataset", "model", "seed"])
    done = set(zip(df.dataset, df.model, df.seed))
    for name in args.datasets.split(","):
        ds = load_dataset(Path(args.data_dir) / name, max_rows=args.max_rows, seed=args.seed)
        for model in args.models.split(","):
            if (name, model, args.seed) in done:
                continue
            print(f"[{time.strftime('%H:%M:%S')}] {name} / {model} ...", flush=True)
            row = {"dataset": name, "model": model, "seed": args.seed,
                   "metric": "accuracy" if ds.is_classification else "rmse", "time_limit": args.time_limit,
                   "max_rows": args.max_rows, **run_one(ds, model, args.seed, args.time_limit, args.num_cpus)}
            print("   ", row, flush=True)
            df = pd.concat([df, pd.DataFrame([row])], ignore_index=True)
            df.to_csv(csv, index=False)
    write_markdown(df, out)


if __name__ == "__main__":
    main()
