"""The report's figures: PAMA bars, critical-difference diagram (autorank's), fit time vs normalized score.

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
    """autorank's critical-difference diagram: average ranks on an axis (1 = best, on the right), the
    Nemenyi critical difference above it, bars joining models whose differences are not significant; a
    label gives each model's average rank.  Drawn only when the Friedman test rejects, as autorank
    advises; otherwise the figure lists the average ranks with the reason (too few datasets, two
    models, no difference)."""
    path = Path(path)
    title = f"Average rank over {cd.n_datasets} dataset{'' if cd.n_datasets == 1 else 's'}"
    if cd.avg_ranks.empty:
        return _empty(path, "Critical difference diagram", "no ranked results yet")
    if cd.ranking is None or cd.cd is None or not cd.significant:
        lines = [f"{name}: {rank:.2f}" for name, rank in cd.avg_ranks.items()]
        if cd.test is not None:
            lines.append(f"{cd.test}: p = {cd.p_value:.3g}")
        if cd.note:
            lines.append(cd.note)
        return _empty(path, title, "\n".join(lines))
    import autorank

    labelled = cd.ranking.rankdf.rename(index=lambda m: f"{m} ({cd.avg_ranks[m]:.2f})")
    ax = autorank.plot_stats(cd.ranking._replace(rankdf=labelled), width=8)
    ax.set_title(f"{title} (Friedman p = {cd.p_value:.3g}; Nemenyi CD = {cd.cd:.2f}, alpha = {cd.alpha:g})",
                 fontsize=10)
    fig = ax.get_figure()
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
