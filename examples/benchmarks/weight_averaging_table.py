"""Table of the regression weight-averaging measurements (commits de93d22 / 39982ce, 2026-12-01) from
``results.jsonl`` and ``screening.jsonl`` in ``results/weight_averaging/regression/``.

    python examples/benchmarks/weight_averaging_table.py   # writes results.md in that folder

``results.jsonl``: ``examples/benchmarks/benchmark.py`` fits (P1, seed 0, 2 cores, one fit at a time, nothing else
running).  Rows whose fit ran while a variant was the package default are relabelled with the variant's
name and settings (``relabelled_from``), so each row says what ran.  ``average_kept``: fits before
2026-12-01 11:24 always kept the moving average (commits 481dec5 / 39982ce); later ones keep the better
of the live and the averaged weights on validation (the shipped behaviour).  ``screening.jsonl``: direct 1-core
fits with a 1,500 s limit (never reached; early stopping ended each), run two at a time, used to choose
what to measure; their validation and test RMSE only.
"""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent / "results" / "weight_averaging" / "regression"
SETTINGS = ("ema_epochs", "add_act", "num_decoder_layers")


def variant(hp: dict) -> str:
    full = {"ema_epochs": None, "add_act": False, "num_decoder_layers": 1, **hp}
    return ", ".join(f"{k}={full[k]}" for k in SETTINGS)


def main() -> None:
    lines = ["# MAYA regression defaults: a moving average of the weights (de93d22 / 39982ce, 2026-12-01)", "",
             "Test RMSE (lower is better) and validation RMSE, P1 split, seed 0. "
             "`ema_epochs=None, add_act=False, num_decoder_layers=1` is the default before these runs (the paper: no average).", "",
             "## Benchmark fits (`examples/benchmarks/benchmark.py`, 2 cores, nothing else running)", "",
             "| dataset | budget s | settings | average kept | test RMSE | val RMSE | fit s |",
             "|---|---:|---|---|---:|---:|---:|"]
    rows = [json.loads(l) for l in open(HERE / "results.jsonl")]
    for r in sorted(rows, key=lambda r: (r["dataset"], r["time_limit"], variant(r["hyperparameters"]), r["started"])):
        lines.append(f"| {r['dataset']} | {r['time_limit']:.0f} | {variant(r['hyperparameters'])} | {r['average_kept']} | "
                     f"{r['rmse']:.4f} | {abs(r['val_score']):.4f} | {r['fit_s']:.0f} |")
    lines += ["", "Screening rows below always kept the average when one was set.", "",
              "## Screening (direct fits, 1 core, 1,500 s limit, two at a time; early stopping ended each)", "",
              "| dataset | settings | test | best val | epochs (best) | wall s |", "|---|---|---:|---:|---:|---:|"]
    for l in open(HERE / "screening.jsonl"):
        r = json.loads(l)
        test = r["test"].get("root_mean_squared_error", r["test"].get("accuracy"))
        best_val = max(h[2] for h in r["hist"])
        lines.append(f"| {r['ds']} | {variant(r['hp'])}{', patience=' + str(r['hp']['patience']) if 'patience' in r['hp'] else ''} | "
                     f"{abs(test):.4f} | {abs(best_val):.4f} | {r['epochs']} ({r['best_epoch']}) | {r['wall']:.0f} |")
    (HERE / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
