"""Plot the campaign's candidates: zero-shot wins vs LR / KNN and average rank against cumulative training hours.

    python examples/benchmarks/plot_campaign.py   # reads results/pretraining/campaign_candidates.csv, writes campaign.png there
"""

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent / "results" / "pretraining"


def main() -> None:
    with open(HERE / "campaign_candidates.csv") as f:
        rows = list(csv.DictReader(f))
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, label, marker in (("wins_vs_lr", "zero-shot wins vs LR (of 10)", "o"),
                               ("wins_vs_knn", "zero-shot wins vs KNN (of 10)", "s")):
        pts = [(float(r["cumulative_train_hours"]), float(r[key])) for r in rows if r[key]]
        if pts:
            ax.plot(*zip(*pts), marker=marker, label=label)
    ax.axhline(6, ls=":", c="C0", lw=1)
    ax.axhline(8, ls=":", c="C1", lw=1)
    for r in rows:
        if r["adopted"] == "yes":
            ax.axvline(float(r["cumulative_train_hours"]), c="grey", lw=0.8, alpha=0.5)
    ax.set_xlabel("cumulative training hours (1 torch thread + 1 prior worker)")
    ax.set_ylabel("datasets won (dotted: the aims 6 / 8)")
    ax.set_ylim(0, 10)
    ranks = [(float(r["cumulative_train_hours"]), float(r["avg_rank_zero_shot"])) for r in rows if r["avg_rank_zero_shot"]]
    if ranks:
        ax2 = ax.twinx()
        ax2.plot(*zip(*ranks), c="C2", marker="^", ls="--", label="avg rank of 6 models (right)")
        ax2.set_ylim(6, 1)
        ax2.set_ylabel("zero-shot TABSWIFT average rank (1 = best)")
        ax2.legend(loc="lower right", fontsize=8)
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(HERE / "campaign.png", dpi=120)


if __name__ == "__main__":
    main()
