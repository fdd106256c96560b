"""The report: ``results.md`` and three figures, rebuilt from ``results.jsonl`` alone.

Rebuilt from scratch on every call (cheap), so it always reflects everything accumulated so far,
whichever runs wrote the rows; ``examples/benchmarks/benchmark.py --report-only`` calls just this.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

import numpy as np
import pandas as pd

from . import plots
from .results import read_results
from .stats import (
    CLASSIFICATION,
    HIGHER_IS_BETTER,
    METRIC_NAMES,
    average_ranks,
    critical_difference,
    normalized_scores,
    pama,
    results_frame,
    score_matrix,
)

RESULTS_FILE = "results.jsonl"
REPORT_FILES = ("results.md", "pama.png", "cd_diagram.png", "fit_time_vs_score.png")


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _fmt(v: float) -> str:
    return f"{v:.1f}" if abs(v) >= 100 else f"{v:.4f}"


def _metric_table(df: pd.DataFrame, field: str, labels: List[str], fmt=_fmt, best=None) -> List[str]:
    """dataset × model cells of mean ± std over the finished seeds; the best mean in bold;
    ``failed`` where every seed failed, ``-`` where the model was not run."""
    lines = ["| dataset | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for dataset, g in df.groupby("dataset", sort=True):
        ok = g[g["ok"]].copy()
        ok[field] = pd.to_numeric(ok[field], errors="coerce") if field in ok else np.nan
        agg = ok.groupby("label")[field].agg(["mean", "std", "count"])
        agg = agg[agg["count"] > 0]
        top = None if best is None or agg.empty else (agg["mean"].max() if best else agg["mean"].min())
        cells = []
        for label in labels:
            if label in agg.index:
                m, s, n = agg.loc[label]
                text = fmt(m) + (f" ± {fmt(s)}" if n > 1 else "")
                cells.append(f"**{text}**" if top is not None and m == top else text)
            else:
                cells.append("failed" if label in set(g["label"]) else "-")
        lines.append(f"| {dataset} | " + " | ".join(cells) + " |")
    return lines


def _summary(df, labels, avg, auc_avg, pama_pct, n_auc) -> List[str]:
    lines = ["| model | avg rank | avg rank ROC-AUC" + (f" ({_n(n_auc, 'dataset')})" if n_auc else "") +
             " | PAMA % | fits ok / failed | mean fit s | median predict s / 1k rows | max peak memory MB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label in sorted(labels, key=lambda m: (avg.get(m, np.inf), m)):
        g = df[df["label"] == label]
        ok = g[g["ok"]]
        num = lambda c: pd.to_numeric(ok[c], errors="coerce") if c in ok else pd.Series(dtype=float)  # noqa: E731
        cell = lambda s, f: "-" if s.dropna().empty else f(s.dropna())  # noqa: E731
        lines.append(" | ".join([
            f"| {label}",
            f"{avg[label]:.2f}" if label in avg else "-",
            f"{auc_avg[label]:.2f}" if label in auc_avg else "-",
            f"{pama_pct[label]:.1f}" if label in pama_pct else "-",
            f"{len(ok)} / {len(g) - len(ok)}",
            cell(num("fit_s"), lambda s: f"{s.mean():.1f}"),
            cell(num("predict_s_per_1k"), lambda s: f"{s.median():.4f}"),
            cell(num("mem_fit_peak_mb"), lambda s: f"{s.max():.0f}"),
        ]) + " |")
    return lines


def write_report(out: str | Path, tolerance: float = 0.0, alpha: float = 0.05,
                 report_dir: str | Path | None = None) -> Dict[str, Path]:
    """Write ``results.md``, ``pama.png``, ``cd_diagram.png`` and ``fit_time_vs_score.png`` from
    ``out/results.jsonl`` into ``report_dir`` (default ``out``); returns their paths."""
    out = Path(out)
    report_dir = Path(report_dir) if report_dir is not None else out
    report_dir.mkdir(parents=True, exist_ok=True)
    paths = {name: report_dir / name for name in REPORT_FILES}
    df = results_frame(read_results(out / RESULTS_FILE))
    labels = sorted(df["label"].unique()) if not df.empty else []

    primary = score_matrix(df, "primary")
    norm = normalized_scores(primary.oriented)
    cd = critical_difference(norm, alpha)
    avg = cd.avg_ranks  # the ranks of the normalized scores are those of the scores
    pama_pct = pama(primary.oriented, tolerance)
    auc = score_matrix(df, "roc_auc")
    auc_avg = average_ranks(auc.oriented)

    md = ["# Benchmark results", ""]
    if df.empty:
        md.append(f"No results yet in `{RESULTS_FILE}`.")
    else:
        n_ok = int(df["ok"].sum())
        md += [f"{len(df)} fits ({n_ok} ok, {len(df) - n_ok} failed) on {_n(df['dataset'].nunique(), 'dataset')}, "
               f"seeds {sorted(set(int(s) for s in df['seed']))}.", "", "Configs (hash: settings):"]
        for config, g in df.groupby("config", sort=True):
            r = g.iloc[0]
            hp = sorted({str(h) for h in g.get("hyperparameters", pd.Series([{}])).tolist()})
            md.append(f"- `{config}`: time_limit={r.get('time_limit')}, max_rows={r.get('max_rows')}, "
                      f"hyperparameters={', '.join(hp)}; models {', '.join(sorted(g['model'].unique()))}")
        md += ["", "## Summary", "",
               f"Average rank over {_n(len(primary.values), 'dataset')} on the primary metric (accuracy for "
               "classification, RMSE for regression): models are ranked within each dataset by their mean "
               "over seeds (1 = best, ties share the average rank, a model whose fits all failed ranks last). "
               f"PAMA = % of datasets where the model is among the best (relative tolerance {tolerance:g}).", ""]
        md += _summary(df, labels, avg, auc_avg, pama_pct, len(auc.values))
        if cd.test is not None:
            md += ["", f"{cd.test} p = {cd.p_value:.4g}."]
        if cd.groups:
            how = (f"Friedman test, then Nemenyi's critical difference of {cd.cd:.3f} in average rank"
                   if cd.cd is not None else "one-sided Wilcoxon signed-rank test")
            md += ["", f"Not significantly different ({how}; autorank, alpha = {alpha:g}): "
                   + "; ".join("{" + ", ".join(g) + "}" for g in cd.groups) + "."]
        if cd.note:
            md += ["", f"Note: {cd.note}."]
        for what, items in (("datasets with runs still missing", primary.excluded_datasets),
                            ("models missing on most datasets", primary.excluded_models)):
            if items:
                md += ["", f"Left out of the ranking ({what}): {', '.join(items)}."]
        for metric in ("accuracy", "roc_auc", "rmse"):
            part = df[df["task"].isin(CLASSIFICATION) == (metric != "rmse")]
            if part.empty:
                continue
            better = "higher" if HIGHER_IS_BETTER[metric] else "lower"
            md += ["", f"## {METRIC_NAMES[metric]} ({better} is better; mean ± std over seeds)", ""]
            md += _metric_table(part, metric, labels, best=HIGHER_IS_BETTER[metric])
        md += ["", "## Fit time (s)", ""] + _metric_table(df, "fit_s", labels, fmt=lambda v: f"{v:.1f}")
        md += ["", "## Inference time (s per 1,000 rows)", ""] + _metric_table(df, "predict_s_per_1k", labels)
        md += ["", "## Peak memory of the fit (MB)", ""] + _metric_table(
            df, "mem_fit_peak_mb", labels, fmt=lambda v: f"{v:.0f}")
        failed = df[~df["ok"]].sort_values(["dataset", "model", "seed"])
        if len(failed):
            md += ["", "## Failures", ""] + [f"- {r['dataset']} / {r['label']} / seed {r['seed']}: "
                                             f"{str(r['status'])[:300]}" for r in failed.to_dict("records")]
    paths["results.md"].write_text("\n".join(md) + "\n")

    plots.pama_bar(pama_pct, paths["pama.png"], tolerance, len(primary.values))
    plots.cd_diagram(cd, paths["cd_diagram.png"])
    points = []
    if not primary.values.empty and "fit_s" in df:  # only successful fits write their timings
        fit = df[df["ok"]].assign(fit_s=lambda d: pd.to_numeric(d["fit_s"], errors="coerce"))
        fit = fit.groupby(["dataset", "label"])["fit_s"].mean()
        for dataset in primary.values.index:
            for label in primary.values.columns:
                if np.isfinite(primary.values.loc[dataset, label]) and np.isfinite(fit.get((dataset, label), np.nan)):
                    points.append({"dataset": dataset, "label": label, "score": norm.loc[dataset, label],
                                   "fit_s": max(fit[(dataset, label)], 1e-3)})
    plots.fit_time_vs_score(pd.DataFrame(points), paths["fit_time_vs_score.png"])
    return paths
