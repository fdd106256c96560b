"""MAYA on tables wider than its 300-feature cap: all columns (cap raised) vs the 300 most informative
vs only the significant ones, side by side at one time limit, with LightGBM on all columns as a reference.

    python examples/benchmarks/maya_wide_features.py --time-limit 60 --out examples/benchmarks/results/probes/wide_features

Tables (no shared dataset has more than 93 columns, so both are built):
- ``spambase+400noise``: spambase's 57 columns and 400 N(0, 1) noise columns (1,700 rows sampled).
- ``factors520``: 520 correlated columns driven by 4 latent factors plus noise; the label is a linear
  rule of two factors (the wide table of ``plugin_tests/test_odd_inputs.py``), 1,700 rows.
Split: P1 (64/16/20), seed 0.  Columns are ranked on the training rows only by
``tabswift.preprocessing.screen_columns`` (rank F-test; Benjamini-Hochberg 5 % for "significant").
Results: ``results.jsonl`` (one line per fit; reruns append) and ``results.md`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd


def tables(data_dir: Path, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    spam = pd.read_csv(data_dir / "spambase" / "data.csv.gz").sample(n=n, random_state=seed).reset_index(drop=True)
    noise = pd.DataFrame(rng.standard_normal((n, 400)), columns=[f"noise{i}" for i in range(400)])
    yield "spambase+400noise", pd.concat([spam.drop(columns="spam"), noise, spam[["spam"]]], axis=1), "spam"
    z = rng.normal(size=(n, 4))
    load = np.random.default_rng(123).normal(size=(4, 520))
    wide = pd.DataFrame(z @ load + 0.5 * rng.normal(size=(n, 520)), columns=[f"c{i}" for i in range(520)])
    wide["y"] = (z[:, 0] - 0.5 * z[:, 1] > 0).astype(int)
    yield "factors520", wide, "y"


def main(argv=None):
    from autogluon.tabular import TabularPredictor

    import autogluon_maya  # noqa: F401  (registers MAYA)
    from benchlib.protocol import Dataset, default_datasets_dir, p1_split
    from autogluon_maya.tabswift.preprocessing import screen_columns
    from scipy.stats import rankdata
    from sklearn.feature_selection import f_classif

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--time-limit", type=float, default=60)
    ap.add_argument("--rows", type=int, default=1700)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--variants", default="gbm,all,top300,significant")
    ap.add_argument("--out", default="examples/benchmarks/results/probes/wide_features")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, df, target in tables(default_datasets_dir(), args.rows):
        train, val, test = p1_split(Dataset(name, df, target, "binary"), seed=0)
        features = [c for c in df.columns if c != target]
        x_train, y_train = train[features].to_numpy(), train[target].to_numpy()
        significant = screen_columns(x_train, y_train, classification=True)  # all columns if < 2 pass
        score = np.nan_to_num(f_classif(rankdata(x_train, axis=0), y_train)[0])
        strongest = [features[i] for i in np.argsort(-score, kind="stable")]
        for variant in args.variants.split(","):
            cols = {"gbm": features, "all": features, "top300": strongest[:300],
                    "significant": [features[i] for i in significant]}[variant]
            keep = cols + [target]
            hp = {"GBM": {}} if variant == "gbm" else {"MAYA": {"ag.max_features": 10_000}}
            t0 = time.time()
            pred = TabularPredictor(label=target, problem_type="binary", eval_metric="accuracy", verbosity=0).fit(
                train[keep], tuning_data=val[keep], hyperparameters=hp, time_limit=args.time_limit,
                num_cpus=args.num_cpus, fit_weighted_ensemble=False)
            board = pred.leaderboard(test[keep], silent=True)
            model = pred._trainer.load_model(board.model.iloc[0])
            row = {"table": name, "variant": variant, "columns": len(cols), "rows_train": len(train),
                   "time_limit": args.time_limit, "val": float(board.score_val.iloc[0]),
                   "test": float(board.score_test.iloc[0]), "fit_s": round(time.time() - t0, 1),
                   "epochs": getattr(model, "_fit_summary", {}).get("epochs")}
            print(json.dumps(row), flush=True)
            with open(out / "results.jsonl", "a") as f:
                f.write(json.dumps(row) + "\n")
    rows = [json.loads(line) for line in open(out / "results.jsonl")]
    lines = ["| table | variant | columns | val acc | test acc | fit s | epochs |", "|---|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['table']} | {r['variant']} | {r['columns']} | {r['val']:.4f} | {r['test']:.4f} | {r['fit_s']} | "
              f"{r['epochs']} |" for r in rows]
    (out / "results.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
