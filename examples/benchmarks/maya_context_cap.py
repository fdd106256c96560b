"""What capping MAYA's inference context costs on validation: the same fitted networks scored with every training
row as their context (the paper's, Eq. 14) and with N rows drawn from it.

    python examples/benchmarks/maya_context_cap.py --data-dir /data/tables                # the decision run below
    python examples/benchmarks/maya_context_cap.py --report-only                          # rebuild the report

MAYA's prediction attends over its context, so predicting costs O(query rows x context rows); ``max_context_rows=N``
(``autogluon_maya.maya.context``) keeps N training rows, drawn once at fit (by class for classification).  This
script measures what that costs where it matters, on the largest decision tables at full size (adult,
bank_marketing, electricity, diamonds, california_housing; split seeds 0 and 1 of protocol P1, validation rows
only): one default MAYA fit per (table, seed) with the whole training part as its context, then each member's
context cut to the N rows ``draw_context`` would draw (the encoded keys and label embeddings of a row do not
depend on the other rows, so keeping N rows of the encoded context is exactly a context of those N rows), the
validation rows scored with AutoGluon's metric for the table (accuracy, RMSE), and the prediction timed.

What it does not measure: a fit with the cap also validates during training against the capped context, so its
epochs and members may be chosen a little differently from the full-context fit scored here.

Outputs in ``--out`` (default ``examples/benchmarks/results/maya_context_cap``): ``results.jsonl`` (one row per
(table, seed, N), N = null for the whole context; resumable: a (table, seed) with rows is not fitted again),
``results.md`` (per N: the (table, seed) pairs better / level / worse than the whole context, the sign test's
p-value, the mean relative change of the validation error, the prediction seconds per 1,000 rows) and
``context_cap.png``.  Cost at the defaults: 10 fits of ``--time-limit`` 180 s plus the scoring, about 40 min on
2 cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib.p1 import p1_data, p1_fit  # noqa: E402
from benchlib.protocol import default_datasets_dir  # noqa: E402
from benchlib.provenance import code_version  # noqa: E402
from benchlib.results import append_result  # noqa: E402
from benchlib.stats import p_text, sign_test_p  # noqa: E402

TABLES = ("adult", "bank_marketing", "electricity", "diamonds", "california_housing")
CAPS = (1024, 2048, 4096, 8192, 16384)
DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "maya_context_cap"
LEVEL = 1e-9  # a relative change of the validation error within this is "level"


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def cut_context(members, rows):
    """Each member's context buffers, and a function restoring them; ``rows`` (indices into the training rows,
    or None) keeps those rows only."""
    saved = [{name: buf for name, buf in m.named_buffers() if name.startswith("ctx_")} for m in members]
    for m, bufs in zip(members, saved):
        for name, buf in bufs.items():
            setattr(m, name, buf if rows is None else buf[rows])

    def restore():
        for m, bufs in zip(members, saved):
            for name, buf in bufs.items():
                setattr(m, name, buf)
    return restore


def score_caps(fit, caps, seed: int) -> list[dict]:
    """Validation score and prediction seconds per 1,000 rows of the fitted model, for the whole context and
    each cap below the training rows."""
    from autogluon_maya.maya.context import draw_context

    data, predictor, name = fit.data, fit.predictor, fit.model_name
    predictor.persist(models=[name])
    model = predictor._trainer.models[name]
    members = list(model.model.members)
    n_train = len(data.train)
    classification = data.dataset.is_classification
    if members and members[0].context_size != n_train:
        raise RuntimeError(f"{data.name}: the context has {members[0].context_size} rows, the training part "
                           f"{n_train}")
    y = data.train[data.target].to_numpy()
    metric = predictor.eval_metric.name
    rows = []
    for cap in [None, *[c for c in caps if c < n_train]]:
        restore = cut_context(members, draw_context(y, cap, seed, classification) if cap else None)
        try:
            t0 = time.perf_counter()
            score = predictor.evaluate(data.val, model=name, silent=True)[metric]
            seconds = time.perf_counter() - t0
        finally:
            restore()
        rows.append({"cap": cap, "context_rows": cap or n_train, "metric": metric,
                     "val_error": float(-score if score < 0 else 1.0 - score),
                     "val_predict_s_per_1k": round(1000.0 * seconds / len(data.val), 4)})
    return rows


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    done = {(r["dataset"], r["seed"]) for r in read_rows(results)}
    code = code_version(out=out)
    for table in args.datasets.split(","):
        for seed in [int(s) for s in args.seeds.split(",")]:
            if (table, seed) in done:
                continue
            print(f"[{time.strftime('%H:%M:%S')}] {table} seed {seed} ...", flush=True)
            data = p1_data(Path(args.data_dir) / table, seed=seed)
            fit = p1_fit(data, {"MAYA": {}}, time_limit=args.time_limit, num_cpus=args.num_cpus)
            try:
                base = {"dataset": table, "seed": seed, "task": data.task, "n_train": len(data.train),
                        "n_val": len(data.val), "time_limit": args.time_limit, "fit_s": round(fit.fit_s, 1),
                        "members": len(fit.model.model.members), **code}
                for row in score_caps(fit, [int(c) for c in args.caps.split(",")], seed):
                    append_result(results, {**base, **row})
                    print(f"    N={row['cap']}: val error {row['val_error']:.5f}, "
                          f"{row['val_predict_s_per_1k']} s per 1,000 rows", flush=True)
            finally:
                fit.cleanup()
    report(out)


def report(out: Path) -> None:
    rows = pd.DataFrame(read_rows(out / "results.jsonl"))
    full = rows[rows.cap.isna()].set_index(["dataset", "seed"])
    lines = ["# MAYA's inference context capped at N rows: validation against the whole context", "",
             "The same fitted networks (one default MAYA fit per table and split seed, full-size tables, P1) "
             "scored on their validation rows with the whole training part as context and with N rows drawn "
             "from it (`max_context_rows=N`). Relative change of the validation error (1 - accuracy, RMSE): "
             "negative is better. Package " + ", ".join(sorted(set(rows.package_commit))) + ".", "",
             "| N | pairs | better | level | worse | sign test p | mean change | largest loss | predict s / 1k rows "
             "(whole context: same pairs) |", "|---|---|---|---|---|---|---|---|---|"]
    summary = []
    for cap, part in rows[rows.cap.notna()].groupby("cap"):
        ref = full.loc[list(zip(part.dataset, part.seed))]
        change = (part.val_error.to_numpy() - ref.val_error.to_numpy()) / ref.val_error.to_numpy()
        better, worse = int((change < -LEVEL).sum()), int((change > LEVEL).sum())
        p = sign_test_p(better, worse)
        summary.append({"cap": int(cap), "mean_change": float(change.mean()), "p": p})
        lines.append(f"| {int(cap):,} | {len(part)} | {better} | {len(part) - better - worse} | {worse} | {p_text(p)} "
                     f"| {100 * change.mean():+.2f} % | {100 * change.max():+.2f} % | "
                     f"{part.val_predict_s_per_1k.mean():.3f} ({ref.val_predict_s_per_1k.mean():.3f}) |")
    lines += ["", "Per (table, seed): validation error by N.", ""]
    wide = rows.assign(N=rows.cap.fillna(0).astype(int)).pivot_table(
        index=["dataset", "seed", "n_train"], columns="N", values="val_error")
    wide.columns = ["whole" if c == 0 else f"{c:,}" for c in wide.columns]
    lines += ["| table | seed | training rows | " + " | ".join(wide.columns) + " |",
              "|---|---|---|" + "---|" * len(wide.columns)]
    lines += [f"| {t} | {s} | {n:,} | " + " | ".join("" if pd.isna(v) else f"{v:.5g}" for v in vals) + " |"
              for (t, s, n), vals in zip(wide.index, wide.to_numpy())]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(rows, full, out / "context_cap.png")
    print("\n".join(lines))


def plot(rows: pd.DataFrame, full: pd.DataFrame, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for (table, seed), part in rows[rows.cap.notna()].groupby(["dataset", "seed"]):
        ref = full.loc[(table, seed), "val_error"]
        ax.plot(part.cap, 100 * (part.val_error - ref) / ref, marker="o", label=f"{table} s{seed}")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("context rows N")
    ax.set_ylabel("validation error vs whole context (%)")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=str(default_datasets_dir()))
    ap.add_argument("--datasets", default=",".join(TABLES))
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--caps", default=",".join(map(str, CAPS)))
    ap.add_argument("--time-limit", type=float, default=180.0)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    report(Path(args.out)) if args.report_only else run(args)


if __name__ == "__main__":
    main()
