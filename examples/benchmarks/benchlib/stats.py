"""Aggregation and statistics over benchmark results: score matrices, average ranks, PAMA and the tests
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

The rank statistics come from maintained libraries: average ranks from TabArena's ``bencheval``, the
Friedman test with Nemenyi's critical difference (or, for two models, the Wilcoxon signed-rank test)
and the diagram from ``autorank``.  Both are imported where they are used, so that importing this
module stays cheap (``autorank`` loads matplotlib and statsmodels).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional

import numpy as np
import pandas as pd

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


def average_ranks(oriented: pd.DataFrame) -> pd.Series:
    """Mean rank per model over datasets, best first (ties in the mean: by name), computed by TabArena's
    ``bencheval``: within a dataset 1 = best and tied models share the average rank.

    bencheval ranks errors (lower is better, >= 0), so each cell becomes its shortfall from the
    dataset's best score, which orders the models exactly as the scores do; a failed model (NaN)
    gets an infinite error, so it ranks after every finished model and failures tie among themselves."""
    if oriented.empty:
        return pd.Series(dtype=float)
    from bencheval.evaluator import BenchmarkEvaluator

    shortfall = oriented.max(axis=1).to_numpy()[:, None] - oriented.to_numpy(dtype=float)
    n, k = shortfall.shape
    long = pd.DataFrame({"dataset": np.repeat(oriented.index.to_numpy(), k),
                         "model": np.tile(oriented.columns.to_numpy(), n),
                         "error": np.nan_to_num(shortfall, nan=np.inf).ravel()})
    evaluator = BenchmarkEvaluator(method_col="model", task_col="dataset", error_col="error",
                                   columns_to_agg_extra=None)
    ranks = evaluator.compute_rank(evaluator.compute_results_per_task(long))
    ranks.index.name = None
    return ranks.rename(None).sort_index().sort_values(kind="mergesort")


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


#: autorank refuses fewer paired measurements (datasets) than this
MIN_DATASETS = 5


@dataclass
class CDResult:
    """What the critical-difference diagram shows: average ranks, the omnibus test and its p-value,
    Nemenyi's critical difference, and the groups of models not significantly different.

    ``ranking`` is autorank's result (its ``rankdf`` in the order of ``avg_ranks``), None when no test
    could be run; ``note`` says why, or that the test found no difference."""

    avg_ranks: pd.Series
    n_datasets: int
    alpha: float
    test: Optional[str] = None
    p_value: Optional[float] = None
    cd: Optional[float] = None
    groups: List[List[str]] = field(default_factory=list)
    note: Optional[str] = None
    ranking: Optional[Any] = None

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < self.alpha


def rank_groups(mean_ranks: List[float], cd: float) -> List[tuple]:
    """The bars of a critical-difference diagram, as ``(first, last)`` positions in ``mean_ranks`` (models in
    rank order): from each model, the run up to the last model within ``cd`` of it, kept when it reaches past
    every earlier run (a run inside another is not a bar of its own).  The rule autorank's ``plot_stats``
    draws its bars by, so that the groups in the report's text are the bars in its figure."""
    runs, reach = [], -1
    for i, rank in enumerate(mean_ranks):
        last = max((j for j in range(i + 1, len(mean_ranks)) if abs(rank - mean_ranks[j]) <= cd), default=None)
        if last is not None and last > reach:
            runs.append((i, last))
            reach = last
    return runs


def critical_difference(normalized: pd.DataFrame, alpha: float = 0.05) -> CDResult:
    """Rank tests on a datasets × models matrix of normalized scores (``normalized_scores``), by autorank.

    Three models or more: Friedman test, then Nemenyi's critical difference (Demšar 2006); the groups
    are autorank's, the ones its diagram draws as bars.  If Friedman does not reject, all models form
    one group.  Two models: Wilcoxon signed-rank test (one-sided, the better median against the other).
    Fewer than ``MIN_DATASETS`` datasets or 2 models: average ranks only, with a note."""
    avg = average_ranks(normalized)
    n, k = normalized.shape
    res = CDResult(avg, n, alpha)
    if k < 2 or n < MIN_DATASETS:
        res.note = f"{n} dataset(s), {k} model(s): too few for significance tests; average ranks only"
        if k >= 2 and n >= 3:
            res.note += f" (autorank's tests need at least {MIN_DATASETS} datasets)"
        return res
    import autorank

    # force_mode="nonparametric": the scores are per-dataset min-max scalings with failures at -1, far
    # from normal, and the report is about ranks.  Left to its Shapiro-Wilk and Levene checks, autorank
    # would switch to repeated-measures ANOVA with Tukey's HSD (no ranks, no CD diagram) whenever a
    # handful of datasets happened to pass them.  autorank prints its tables and decisions to stdout,
    # and scipy warns on constant columns (every model tied); neither belongs in the report's output.
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranking = autorank.autorank(normalized.reset_index(drop=True), alpha=float(alpha), order="descending",
                                    force_mode="nonparametric")
    names = list(avg.index)
    ranking = ranking._replace(rankdf=ranking.rankdf.loc[names])
    res.ranking = ranking
    p = float(ranking.pvalue)
    res.p_value = 1.0 if np.isnan(p) else p  # NaN: every model tied on every dataset
    if ranking.omnibus == "friedman":
        res.test, res.cd = "Friedman test", float(ranking.cd)
        if not res.significant:
            res.groups = [names]
            res.note = f"Friedman p = {res.p_value:.3g} >= {alpha:g}: no significant differences"
        else:
            res.groups = [names[a:b + 1] for a, b in rank_groups(ranking.rankdf["meanrank"].tolist(), res.cd)]
    else:
        res.test = "One-sided Wilcoxon signed-rank test on normalized scores"
        res.groups = [] if res.significant else [names]
    return res


def sign_test_p(better: int, worse: int) -> float:
    """Two-sided sign test over paired results: the p-value of ``better`` wins and ``worse`` losses (ties left
    out) under "either is as likely"; 1.0 without a win or a loss.  Below 0.1 a difference is called a
    difference in this repository's reports; above it, "level within noise"."""
    from scipy.stats import binomtest

    n = int(better) + int(worse)
    return float(binomtest(int(better), n).pvalue) if n else 1.0


def p_text(p: float) -> str:
    """A p-value as the tables print it: two decimals, "< 0.01" below that."""
    return "< 0.01" if p < 0.005 else f"{p:.2f}"
