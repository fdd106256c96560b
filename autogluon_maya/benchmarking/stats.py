"""Aggregation and statistics over benchmark results: score matrices, ranks, PAMA and the tests
behind the critical-difference diagram.

Conventions, chosen so that one summary covers classification and regression together:

* The *primary* metric of a dataset is accuracy (classification) or RMSE (regression); ROC-AUC is
  reported and ranked separately over the classification datasets.
* A cell of a score matrix is the mean over the seeds that finished; a model whose fits all failed
  on a dataset is NaN there and ranks last (ties among failures share the average rank): a model
  that cannot run is worse than one that can.
* A dataset on which some model has not been run yet (no row at all, e.g. a run in progress) is left
  out of the ranking rather than guessed; a model missing on more than half of the datasets is left
  out instead, so that one extra model tried on one dataset does not empty the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, List, Optional

import numpy as np
import pandas as pd
from scipy import stats as sps

from .results import latest_by_key

HIGHER_IS_BETTER = {"accuracy": True, "roc_auc": True, "rmse": False}
CLASSIFICATION = ("binary", "multiclass")
METRIC_NAMES = {"accuracy": "accuracy", "roc_auc": "ROC-AUC", "rmse": "RMSE"}


def primary_metric(task: str) -> str:
    return "accuracy" if task in CLASSIFICATION else "rmse"


def results_frame(rows: Iterable[dict]) -> pd.DataFrame:
    """The latest row per key as a DataFrame, with ``label`` (the name a model gets in the report)
    and ``ok``.  A model run under several configs gets one label per config (``GBM@1a2b3c4d``):
    different time limits or hyperparameters are different contestants."""
    df = pd.DataFrame(list(latest_by_key(rows).values()))
    if df.empty:
        return pd.DataFrame(columns=["dataset", "model", "seed", "config", "task", "status", "label", "ok"])
    n_configs = df.groupby("model")["config"].nunique()
    df["label"] = [m if n_configs[m] == 1 else f"{m}@{c}" for m, c in zip(df["model"], df["config"])]
    df["ok"] = df["status"] == "ok"
    return df


@dataclass
class ScoreMatrix:
    """datasets × models of mean scores (NaN = failed) and the direction of each dataset's metric."""

    values: pd.DataFrame
    higher_is_better: pd.Series
    excluded_datasets: List[str] = field(default_factory=list)
    excluded_models: List[str] = field(default_factory=list)

    @property
    def oriented(self) -> pd.DataFrame:
        """Scores with the sign flipped where lower is better, so that higher is better everywhere."""
        sign = np.where(self.higher_is_better.reindex(self.values.index).to_numpy(), 1.0, -1.0)
        return self.values.mul(sign, axis=0)


def score_matrix(rows: Iterable[dict] | pd.DataFrame, metric: str = "primary") -> ScoreMatrix:
    """Mean test score over seeds per dataset × model.  ``metric``: ``"primary"`` (accuracy or RMSE
    per dataset), ``"accuracy"``/``"roc_auc"`` (classification datasets) or ``"rmse"``."""
    df = rows if isinstance(rows, pd.DataFrame) else results_frame(rows)
    if df.empty:
        return ScoreMatrix(pd.DataFrame(), pd.Series(dtype=bool))
    df = df.copy()
    is_cls = df["task"].isin(CLASSIFICATION)
    if metric == "primary":
        names = np.where(is_cls, "accuracy", "rmse")
    else:
        df = df[is_cls] if metric in ("accuracy", "roc_auc") else df[~is_cls]
        names = np.full(len(df), metric)
    df["value"] = pd.to_numeric([r.get(n) for r, n in zip(df.to_dict("records"), names)], errors="coerce")
    df["higher"] = [HIGHER_IS_BETTER[n] for n in names]
    if df.empty:
        return ScoreMatrix(pd.DataFrame(), pd.Series(dtype=bool))
    present = df.groupby(["dataset", "label"]).size().unstack()
    means = df[df["ok"]].groupby(["dataset", "label"])["value"].mean().unstack()
    means = means.reindex(index=present.index, columns=present.columns)
    missing = present.isna()
    drop_models = [m for m in present.columns if missing[m].sum() > len(present) / 2]
    missing = missing.drop(columns=drop_models)
    drop_datasets = [d for d in missing.index if missing.loc[d].any()]
    values = means.drop(index=drop_datasets, columns=drop_models).sort_index().sort_index(axis=1)
    higher = df.groupby("dataset")["higher"].first().reindex(values.index)
    return ScoreMatrix(values, higher, drop_datasets, drop_models)


def rank_matrix(oriented: pd.DataFrame) -> pd.DataFrame:
    """Rank of each model within each dataset (1 = best, higher score wins); ties share the average
    rank; NaN (failed) ranks after every finished model."""
    filled = oriented.astype(float).fillna(-np.inf)
    ranks = np.vstack([sps.rankdata(-row, method="average") for row in filled.to_numpy()]) if len(filled) else \
        np.empty((0, oriented.shape[1]))
    return pd.DataFrame(ranks, index=oriented.index, columns=oriented.columns)


def average_ranks(ranks: pd.DataFrame) -> pd.Series:
    """Mean rank per model over datasets, best first."""
    return ranks.mean(axis=0).sort_values(kind="mergesort")


def pama(oriented: pd.DataFrame, tolerance: float = 0.0) -> pd.Series:
    """PAMA (TabSwift paper): percentage of datasets where the model is Among the best Models.

    A model counts on a dataset when its (oriented) score is within ``tolerance`` × |best| of the
    best score: 0 means strictly the best, ties included; 0.01 admits models within 1 % of it.
    Failed models never count."""
    if oriented.empty:
        return pd.Series(dtype=float)
    best = oriented.max(axis=1)
    threshold = best - tolerance * best.abs()
    among = oriented.ge(threshold, axis=0) & oriented.notna()
    return 100.0 * among.mean(axis=0)


def normalized_scores(oriented: pd.DataFrame) -> pd.DataFrame:
    """Per-dataset min–max scaling over the finished models: 1 = best, 0 = worst, failed = -1.

    Why: accuracy and RMSE (in each dataset's own units) cannot be averaged or compared as raw
    differences; after scaling, a difference means the same share of the spread on every dataset.
    A failed model sits below the worst finished one (not level with it), so that the paired tests
    see it as worse, consistent with it ranking last."""
    lo, hi = oriented.min(axis=1), oriented.max(axis=1)
    span = (hi - lo).replace(0.0, np.nan)
    norm = oriented.sub(lo, axis=0).div(span, axis=0)
    spread = pd.DataFrame({c: span.notna() for c in oriented.columns}, index=oriented.index)
    norm = norm.where(spread | oriented.isna(), 1.0)  # all finished models equal: all best
    return norm.fillna(-1.0)


def holm(pvalues) -> np.ndarray:
    """Holm–Bonferroni step-down adjustment: the i-th smallest of m p-values is multiplied by
    (m - i), made monotone (running maximum) and capped at 1; returned in the input order."""
    p = np.asarray(pvalues, dtype=float)
    order = np.argsort(p, kind="mergesort")
    stepped = np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


def wilcoxon_p(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value; 1.0 when the samples do not differ at all."""
    d = np.asarray(x, float) - np.asarray(y, float)
    if np.allclose(d, 0.0):
        return 1.0
    try:
        p = float(sps.wilcoxon(x, y, zero_method="wilcox").pvalue)
    except ValueError:
        return 1.0
    return 1.0 if np.isnan(p) else p


@dataclass
class CDResult:
    """What the critical-difference diagram shows: average ranks, the Friedman p-value, Holm-adjusted
    pairwise Wilcoxon p-values, and the groups of models not significantly different."""

    avg_ranks: pd.Series
    n_datasets: int
    alpha: float
    friedman_p: Optional[float] = None
    pairwise_p: Optional[pd.DataFrame] = None
    groups: List[List[str]] = field(default_factory=list)
    note: Optional[str] = None


def _cliques(names: List[str], p: pd.DataFrame, alpha: float) -> List[List[str]]:
    """Maximal runs of consecutive models (by average rank) in which no pair differs significantly."""
    runs = []
    for i in range(len(names)):
        j = i
        while j + 1 < len(names) and all(p.loc[names[a], names[j + 1]] >= alpha for a in range(i, j + 1)):
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in runs):
            runs.append((i, j))
    return [names[a:b + 1] for a, b in runs]


def critical_difference(ranks: pd.DataFrame, normalized: pd.DataFrame, alpha: float = 0.05) -> CDResult:
    """Friedman test over the rank matrix, then pairwise Wilcoxon signed-rank tests on the normalized
    scores with Holm correction (Demšar 2006, Benavoli et al. 2016).  If Friedman does not reject,
    all models form one group.  Fewer than 3 datasets or 2 models: ranks only, with a note."""
    avg = average_ranks(ranks)
    n, k = ranks.shape
    res = CDResult(avg, n, alpha)
    if k < 2 or n < 3:
        res.note = f"{n} dataset(s), {k} model(s): too few for significance tests; average ranks only"
        return res
    names = list(avg.index)
    if k >= 3:
        res.friedman_p = float(sps.friedmanchisquare(*[ranks[m].to_numpy() for m in names]).pvalue)
        if np.isnan(res.friedman_p):  # identical ranks on every dataset
            res.friedman_p = 1.0
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    raw = [wilcoxon_p(normalized[a].to_numpy(), normalized[b].to_numpy()) for a, b in pairs]
    adj = holm(raw)
    p = pd.DataFrame(1.0, index=names, columns=names)
    for (a, b), v in zip(pairs, adj):
        p.loc[a, b] = p.loc[b, a] = v
    res.pairwise_p = p
    if res.friedman_p is not None and res.friedman_p >= alpha:
        res.groups = [names]
        res.note = f"Friedman p = {res.friedman_p:.3g} >= {alpha}: no significant differences"
    else:
        res.groups = _cliques(names, p, alpha)
    return res
