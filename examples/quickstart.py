"""Fit MAYA and TabSwift next to LightGBM and CatBoost and print the leaderboard.

    python examples/quickstart.py                      # scikit-learn's breast-cancer table (ships with sklearn)
    python examples/quickstart.py --data $AUTOGLUON_MAYA_DATASETS/telco_churn   # a dataset folder
    python examples/quickstart.py --data my_table.csv --label y           # any CSV
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import autogluon_maya  # noqa: F401  (registers "MAYA" and "TABSWIFT")
from autogluon.tabular import TabularPredictor

from autogluon_maya.common.protocol import Dataset, load_dataset, p1_metric, p1_split


def builtin_dataset() -> Dataset:
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    return Dataset("breast_cancer", frame, "target", "binary")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", help="dataset folder (data.csv.gz + meta.json) or CSV file")
    ap.add_argument("--label", help="target column of a CSV (default: its last column)")
    ap.add_argument("--time-limit", type=float, default=60, help="seconds per model")
    ap.add_argument("--max-rows", type=int, default=20000, help="subsample larger tables (seeded)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    if args.data:
        ds = load_dataset(args.data, max_rows=args.max_rows, seed=args.seed, label=args.label)
    else:
        ds = builtin_dataset()
    train, val, test = p1_split(ds, seed=args.seed)
    print(f"{ds.name}: {ds.task}, train/val/test = {len(train)}/{len(val)}/{len(test)} rows")
    predictor = TabularPredictor(label=ds.target, problem_type=ds.task, eval_metric=p1_metric(ds.task),
                                 path=str(Path(tempfile.mkdtemp(prefix="maya_quickstart_")) / "predictor"),  # new folder
                                 verbosity=1)
    predictor.fit(train, tuning_data=val, hyperparameters={"MAYA": {}, "TABSWIFT": {}, "GBM": {}, "CAT": {}},
                  time_limit=3 * args.time_limit, fit_weighted_ensemble=True)
    lb = predictor.leaderboard(test)
    print(lb[["model", "score_test", "score_val", "fit_time", "pred_time_test"]].to_string(index=False))


if __name__ == "__main__":
    main()
