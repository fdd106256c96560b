"""The report of ``examples/benchmarks/tabswift_vs_ta.py``: the table of ``results.md`` and ``speed_ratio.png`` from
its result rows (what ``results.json`` holds)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .cpu_timing import number

#: the model name of TabArena's TA-TABSWIFT in the predictor (the reference every row is compared with)
TA = "TA-TabSwift"


def markdown(rows: list) -> str:
    lines = ["| table | model | agreement with TA | max abs diff | test score | fit s (+ validation pass) "
             "| predict s / 1k rows, loaded / warm | speed vs TA, loaded / warm | peak MB, loaded / warm "
             "| memory vs TA, loaded / warm | disk MB | saved caches vs fresh | tau (mean exit layer) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        reg = r["task"] == "regression"
        if r["model"] == TA:
            agree, diff = "(reference)", ""
        elif reg:
            agree, diff = "", f"{r['vs_ta_max_diff_over_y_std']:.3g} y-std"
        else:
            agree, diff = f"{r['vs_ta_class_agreement']:.4f}", f"{r['vs_ta_max_abs_diff']:.3g}"
        score = (f"RMSE {r['score_rmse']:.4g}" if reg else f"acc {r['score_accuracy']:.4f}"
                 + (f", AUC {r['score_roc_auc']:.4f}" if r.get("score_roc_auc") is not None else ""))
        timed = "predict_loaded_s_per_1k" in r
        speed = (f"{r['predict_loaded_s_per_1k']:.2f} / {r['predict_warm_s_per_1k']:.2f} ({r['threads']} thr.)"
                 if timed else "")
        ratio = (f"{r['speed_ratio_loaded']:.2f}x / {r['speed_ratio_warm']:.2f}x" if "speed_ratio_loaded" in r else "")
        mem = f"{r['predict_loaded_peak_mb']:.0f} / {r['predict_warm_peak_mb']:.0f}" if timed else ""
        mem_ratio = (f"{number(r.get('memory_ratio_loaded'), '.2f')}x / {number(r.get('memory_ratio_warm'), '.2f')}x"
                     if "memory_ratio_loaded" in r else "")
        same = f"{r['saved_vs_fresh_max_diff']:.2g}" if "saved_vs_fresh_max_diff" in r else ""
        tau = ""
        if "tau" in r and r["model"].endswith("_tau"):
            tau = "off" if r["tau"] is None else f"{r['tau']} ({r['mean_exit_layer_test']:.2f} of {r['layers']})"
        lines.append(f"| {r['table']} | {r['variant']} | {agree} | {diff} | {score} | {r['fit_s']:.2f} "
                     f"({number(r.get('fit_window_s'), '.1f')}) | {speed} | {ratio} | {mem} | {mem_ratio} "
                     f"| {number(r.get('disk_mb'), '.1f')} | {same} | {tau} |")
    return "\n".join(lines)


def plot(rows: list, path: Path, size: str = "shipped") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401

    df = pd.DataFrame([r for r in rows if "speed_ratio_loaded" in r])
    tables = list(dict.fromkeys(df["table"]))
    variants = list(dict.fromkeys(df["variant"]))
    fig, ax = plt.subplots(figsize=(10, 5.5))
    width = 0.8 / (2 * len(variants))
    for j, v in enumerate(variants):
        sub = df[df["variant"] == v].set_index("table").reindex(tables)
        x = np.arange(len(tables)) + (2 * j - len(variants) + 0.5) * width
        ax.bar(x, sub["speed_ratio_loaded"], width, label=f"{v}: loaded from disk", color=f"C{j}")
        ax.bar(x + width, sub["speed_ratio_warm"], width, label=f"{v}: persisted, warm", color=f"C{j}", alpha=0.45,
               hatch="//")
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.axhline(1.0, color="black", lw=0.8)
    ax.axhline(2.0, color="red", lw=0.8, ls="--", label="target: 2x")
    ax.set_xticks(np.arange(len(tables)), tables)
    ax.set_ylabel("TA-TABSWIFT predict time / ours (log scale)")
    ax.set_ylim(top=2 * float(df[["speed_ratio_loaded", "speed_ratio_warm"]].max().max()))
    ax.set_title(f"Predict speed on CPU, same weights ({size}), 1 torch thread each (higher = ours faster)")
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.08))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
