"""Your own table: MAYA and TabSwift next to LightGBM and CatBoost on a CSV, then save, reload and predict.

    python examples/own_data.py my.csv --label y                         # 20 % of the rows held out for a test
    python examples/own_data.py train.csv --label y --test test.csv      # your own test file
    python examples/own_data.py my.csv --label y --models MAYA,GBM --time-limit 300 --out my_predictor

The task (binary, multiclass or regression) is inferred by AutoGluon from the label column. The fitted
predictor is saved in ``--out`` and loaded back the way a later process would (``TabularPredictor.load``;
the package is imported by unpickling), and that copy writes the test predictions to
``<out>/predictions.csv``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
from sklearn.model_selection import train_test_split

import autogluon_maya  # noqa: F401  (registers "MAYA" and "TABSWIFT" with AutoGluon)
from autogluon.tabular import TabularPredictor


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="training table (CSV, one row per example)")
    ap.add_argument("--label", required=True, help="the column to predict")
    ap.add_argument("--test", help="test table with the same columns (default: 20 %% of the rows of csv)")
    ap.add_argument("--models", default="MAYA,TABSWIFT,GBM,CAT", help="AutoGluon model keys, comma-separated")
    ap.add_argument("--time-limit", type=float, default=600, help="seconds for the whole fit")
    ap.add_argument("--out", default="own_data_predictor", help="folder the predictor is saved in")
    args = ap.parse_args(argv)

    data = pd.read_csv(args.csv)
    if args.label not in data.columns:
        raise SystemExit(f"--label {args.label!r} is not a column of {args.csv}: {list(data.columns)}")
    if args.test:
        train, test = data, pd.read_csv(args.test)
    else:
        train, test = train_test_split(data, test_size=0.2, random_state=0)

    predictor = TabularPredictor(label=args.label, path=args.out).fit(
        train, hyperparameters={key: {} for key in args.models.split(",")}, time_limit=args.time_limit)
    print(predictor.leaderboard(test, silent=True)[["model", "score_test", "score_val", "fit_time"]].to_string())

    reloaded = TabularPredictor.load(args.out)  # what a later process does
    predictions = reloaded.predict(test.drop(columns=[args.label]))
    predictions.to_frame(args.label).to_csv(Path(args.out) / "predictions.csv", index=False)
    print(f"best model: {reloaded.model_best}; predictions in {Path(args.out) / 'predictions.csv'}")


if __name__ == "__main__":
    main()
