"""Does a fitted MAYA predict better when each query reads only its ``context_topk`` nearest context rows?

    python examples/benchmarks/maya_context_topk.py --datasets letter,satimage --time-limit 300 --out examples/benchmarks/results/ensemble_members/replanning_and_screens

Why: IAIL trains with the batch (128 rows) as its context but predicts with every training row as context;
if that mismatch hurt, restricting the inference context to the top-k similarities would recover accuracy
without retraining.  One default MAYA fit per dataset (protocol P1, seed 0, 2 cores), then validation and
test accuracy for each k (``None`` = the whole context, the default).  Appends to ``<out>/context_topk.jsonl``
and writes ``context_topk.md``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main():
    from autogluon_maya.common.protocol import default_datasets_dir

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=str(default_datasets_dir()))
    ap.add_argument("--datasets", default="letter,satimage")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--topk", default="none,8,32,128,512,2048", help="comma-separated k values; none = all rows")
    ap.add_argument("--out", default="examples/benchmarks/results/probes/context_topk")
    args = ap.parse_args()

    from autogluon_maya.benchmarking.p1 import p1_data, p1_fit

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.datasets.split(","):
        data = p1_data(Path(args.data_dir) / name, seed=0)
        if not data.dataset.is_classification:
            raise SystemExit(f"{name}: this probe reads accuracy; pick classification datasets")
        fit = p1_fit(data, {"MAYA": {}}, time_limit=args.time_limit, num_cpus=2)
        predictor, model, fit_s, ds = fit.predictor, fit.model, fit.fit_s, data.dataset
        # the model's own inputs and label codes, once per part: only context_topk changes between scorings
        parts = {part: (predictor.transform_features(df.drop(columns=[ds.target]), model=model.name),
                        predictor._learner.label_cleaner.transform(df[ds.target]).to_numpy())
                 for part, df in (("val", data.val), ("test", data.test))}
        for k in args.topk.split(","):
            model.params["context_topk"] = None if k.lower() == "none" else int(k)  # read at predict time
            row = {"dataset": name, "topk": model.params["context_topk"], "fit_s": round(fit_s, 1)}
            for part, (X, y) in parts.items():
                proba = model.predict_proba(X)
                pred = np.argmax(proba, axis=1) if proba.ndim == 2 else (proba > 0.5).astype(int)
                row[f"{part}_accuracy"] = float(np.mean(pred == y))
            print(row, flush=True)
            rows.append(row)
            with open(out / "context_topk.jsonl", "a") as f:
                f.write(json.dumps(row) + "\n")
        fit.cleanup()
    lines = ["| dataset | context_topk | validation accuracy | test accuracy |", "|---|---:|---:|---:|"]
    lines += [f"| {r['dataset']} | {r['topk'] or 'all'} | {r['val_accuracy']:.4f} | {r['test_accuracy']:.4f} |"
              for r in rows]
    (out / "context_topk.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
