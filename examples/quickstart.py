"""Fit MAYA and TabSwift next to LightGBM and CatBoost on a real table and print the leaderboard.

    python examples/quickstart.py                              # breast cancer (ships with scikit-learn)
    python examples/quickstart.py --data telco_churn           # a table that ships with the repository
    python examples/quickstart.py --data my_table.csv --label y

Tables by name: see ``examples/example_data.py``.  The rows are split 64/16/20 % into train, validation
(``tuning_data``) and test; the leaderboard scores every model on the test rows.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from autogluon.tabular import TabularPredictor

import autogluon_maya  # noqa: F401  (registers "MAYA" and "TABSWIFT")
from example_data import load_table, split


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="breast_cancer", help="a table name, dataset folder or CSV file")
    ap.add_argument("--label", help="target column of a CSV (default: its last column)")
    ap.add_argument("--time-limit", type=float, default=60, help="seconds per model")
    ap.add_argument("--max-rows", type=int, default=20000, help="subsample larger tables (seeded)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    frame, label = load_table(args.data, args.label, max_rows=args.max_rows, seed=args.seed)
    train, val, test = split(frame, label, seed=args.seed)
    print(f"{args.data}: train / validation / test = {len(train)} / {len(val)} / {len(test)} rows, label {label!r}")
    # each model at most --time-limit seconds (AutoGluon otherwise lets the first models use the whole limit)
    models = {key: {"ag_args_fit": {"max_time_limit": args.time_limit}} for key in ("MAYA", "TABSWIFT", "GBM", "CAT")}
    predictor = TabularPredictor(label=label, verbosity=1,
                                 path=str(Path(tempfile.mkdtemp(prefix="maya_quickstart_")) / "predictor"))
    predictor.fit(train, tuning_data=val, hyperparameters=models, time_limit=len(models) * args.time_limit)
    board = predictor.leaderboard(test, silent=True)
    print(f"problem type {predictor.problem_type}, metric {predictor.eval_metric.name} (higher is better on the "
          f"leaderboard)")
    print(board[["model", "score_test", "score_val", "fit_time", "pred_time_test"]].to_string(index=False))


if __name__ == "__main__":
    main()
