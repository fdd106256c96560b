"""Tables of docs/benchmarks.md: MAYA's first P1 results, the quick benchmark and the first mixed ensemble."""

from __future__ import annotations

import csv

from .common import LS, RESULTS, cell, fmt, grid, markdown, seeds, table


@table("maya-multiclass")
def maya_multiclass() -> str:
    """MAYA at its multiclass defaults (measured at 3711e52 / 3e83191) against NN_TORCH, P1, 300 s, 2 cores."""
    body = [
        ["letter (seed 0)", cell(f"{LS}/letter", "letter", "MAYA"),
         cell("numeric_inputs/transform/letter", "letter", "NN_TORCH"), "—"],
        ["satimage (seeds 0 / 1 / 2)", seeds(f"{LS}/satimage", "satimage", "MAYA"),
         seeds("label_smoothing/first_screen/seeds", "satimage", "NN_TORCH"), "—"],
        ["digits (seeds 0 / 1 / 2)", seeds(f"{LS}/digits", "digits", "MAYA"),
         seeds("numeric_inputs/transform/digits", "digits", "NN_TORCH"),
         seeds("numeric_inputs/transform/digits", "digits", "KNN")],
        ["otto, 10,000-row subsample (seed 0)", cell(f"{LS}/otto", "otto", "MAYA"),
         cell(f"{LS}/otto", "otto", "NN_TORCH"), "—"],
    ]
    return markdown(["dataset, test accuracy", "MAYA", "NN_TORCH", "KNN"], body, "lrrr")


@table("maya-regression")
def maya_regression() -> str:
    """MAYA at its regression defaults (measured at ee1fdc3) against the first P1 run's GBDTs and NN_TORCH."""
    scale = "numeric_inputs/scale/regression"
    body = [["california_housing (600 s)", cell(scale, "california_housing", "MAYA"),
             cell("maya_p1", "california_housing", "GBM"), cell("maya_p1", "california_housing", "CAT"),
             cell("maya_p1", "california_housing", "NN_TORCH")],
            ["cpu_act (60 s)", cell(scale, "cpu_act", "MAYA"), cell("quick", "cpu_act", "GBM"),
             cell("quick", "cpu_act", "CAT"), cell("quick", "cpu_act", "NN_TORCH")]]
    return markdown(["dataset, test RMSE ↓", "MAYA", "GBM", "CAT", "NN_TORCH"], body)


@table("quick")
def quick() -> str:
    return grid("quick", ("telco_churn", "phoneme", "satimage", "cpu_act"),
                ("MAYA", "GBM", "CAT", "NN_TORCH", "TABM", "REALMLP"), ranks=True)


@table("mixed-ensemble")
def mixed_ensemble() -> str:
    with open(RESULTS / "mixed_ensemble" / "results.csv") as f:
        latest = {(r["dataset"], r["config"]): r for r in csv.DictReader(f) if r["status"] == "ok"}
    body = []
    for d in dict.fromkeys(d for d, _ in latest):
        g, m = latest.get((d, "gbdt")), latest.get((d, "mixed"))
        if not (g and m):
            continue
        higher = g["metric"] != "root_mean_squared_error"
        gs, ms = float(g["test_score"]), float(m["test_score"])
        verdict = "tie" if gs == ms else ("mixed" if (ms > gs) == higher else "GBDT-only")
        body.append([d, g["metric"].replace("root_mean_squared_error", "RMSE ↓"), fmt(gs), fmt(ms),
                     f"{float(m['nn_weight']):.2f}", verdict])
    return markdown(["dataset", "metric", "GBDT-only", "mixed", "MAYA + TabSwift weight", "better"], body,
                    "llrrrl")

@table("maya-p1-first")
def maya_p1_first() -> str:
    return grid("maya_p1", ("california_housing", "telco_churn", "adult", "bank_churn"),
                ("MAYA", "GBM", "CAT", "NN_TORCH"), ranks=True)
