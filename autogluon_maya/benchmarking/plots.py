"""The report's figures: PAMA bars, critical-difference diagram, fit time vs normalized score.

Agg backend: the runner works on headless machines and in tests.  Every function writes a figure
even when there is nothing to show (with a note saying so), so a report always has its three files.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .stats import CDResult  # noqa: E402


def _empty(path: Path, title: str, text: str) -> None:
    fig, ax = plt.subplots(figsize=(6, 2))
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def pama_bar(pama: pd.Series, path: str | Path, tolerance: float = 0.0, n_datasets: int = 0) -> None:
    path = Path(path)
    title = f"PAMA: % of {n_datasets} dataset{'' if n_datasets == 1 else 's'} where the model is among the best"
    if pama.empty:
        return _empty(path, title, "no ranked results yet")
    pama = pama.sort_values(ascending=False, kind="mergesort")
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(pama) + 1.5), 3.5))
    bars = ax.bar(pama.index, pama.to_numpy(), color="tab:blue")
    ax.bar_label(bars, labels=[f"{v:.0f}%" for v in pama.to_numpy()], padding=2)
    ax.set_ylim(0, 110)
    ax.set_ylabel("PAMA (%)")
    tol = "best incl. ties" if tolerance == 0 else f"within {100 * tolerance:g}% of the best"
    ax.set_title(f"{title}\n({tol}; accuracy / RMSE)", fontsize=10)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def cd_diagram(cd: CDResult, path: str | Path) -> None:
    """Average ranks on an axis (1 = best, on the left); thick bars join models whose differences
    are not significant (Holm-corrected pairwise Wilcoxon after a Friedman test)."""
    path = Path(path)
    if cd.avg_ranks.empty:
        return _empty(path, "Critical difference diagram", "no ranked results yet")
    names, ranks = list(cd.avg_ranks.index), cd.avg_ranks.to_numpy()
    k = len(names)
    hi = max(k, 2)
    n_groups = len(cd.groups)
    group_gap, label_gap = 0.25, 0.35
    left = names[: (k + 1) // 2]
    right = names[(k + 1) // 2:]
    depth = group_gap * (n_groups + 1) + label_gap * (max(len(left), len(right)) + 1)
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.55 * depth + (0.4 if cd.note else 0)))
    ax.set_xlim(1 - 0.6 * hi, hi + 0.6 * hi)
    ax.set_ylim(-depth - 0.2, 0.6)
    ax.set_axis_off()
    ax.hlines(0, 1, hi, color="black", lw=1)
    for t in range(1, hi + 1):
        ax.vlines(t, 0, 0.1, color="black", lw=1)
        ax.text(t, 0.18, str(t), ha="center", va="bottom", fontsize=9)
    base = -group_gap * (n_groups + 1)
    for side, members in (("left", left), ("right", right)):
        for i, name in enumerate(members if side == "left" else reversed(members)):
            r = float(cd.avg_ranks[name])
            y = base - label_gap * (i + 1)
            x_end = 1 - 0.1 * hi if side == "left" else hi + 0.1 * hi
            ax.plot([r, r, x_end], [0, y, y], color="black", lw=0.8)
            ax.text(x_end + (-0.05 if side == "left" else 0.05) * hi, y, f"{name} ({r:.2f})", fontsize=9,
                    ha="right" if side == "left" else "left", va="center")
    for g, group in enumerate(cd.groups):
        rs = [float(cd.avg_ranks[m]) for m in group]
        y = -group_gap * (g + 1)
        ax.hlines(y, min(rs) - 0.03, max(rs) + 0.03, color="tab:red", lw=4)
    title = f"Average rank over {cd.n_datasets} dataset{'' if cd.n_datasets == 1 else 's'}"
    if cd.friedman_p is not None:
        title += f" (Friedman p = {cd.friedman_p:.3g}; Wilcoxon-Holm, alpha = {cd.alpha:g})"
    elif cd.pairwise_p is not None:
        title += f" (Wilcoxon-Holm, alpha = {cd.alpha:g})"
    ax.set_title(title, fontsize=10)
    if cd.note:
        ax.text((1 + hi) / 2, -depth - 0.1, cd.note, ha="center", va="top", fontsize=8, style="italic")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def fit_time_vs_score(points: pd.DataFrame, path: str | Path) -> None:
    """One point per model and dataset (mean over seeds): fit time on a log axis against the
    normalized score (1 = best model on that dataset, 0 = worst); large markers = model medians."""
    path = Path(path)
    title = "Fit time vs normalized score (accuracy / RMSE)"
    if points.empty:
        return _empty(path, title, "no finished fits yet")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    markers = "osD^vP*Xh<>p"
    for i, (label, g) in enumerate(points.groupby("label", sort=True)):
        color, marker = f"C{i % 10}", markers[i % len(markers)]
        ax.scatter(g["fit_s"], g["score"], color=color, marker=marker, alpha=0.55, s=30)
        ax.scatter([np.median(g["fit_s"])], [np.median(g["score"])], color=color, marker=marker, s=160,
                   edgecolors="black", linewidths=1.2, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("fit time (s, log scale)")
    ax.set_ylabel("normalized score (1 = best on the dataset)")
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="best", title="model (median)", title_fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
