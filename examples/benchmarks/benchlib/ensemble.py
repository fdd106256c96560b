"""Report logic of the ensemble benchmark (``examples/benchmarks/mixed_ensemble_benchmark.py``): GBDT-only
against GBDTs + MAYA + TabSwift against GBDTs + TabM + RealMLP, one whole AutoGluon fit each.

Pure functions on numbers and labels, no AutoGluon and no files, so that the report can be rebuilt from
the results file and every rule here is unit-tested on synthetic rows:

* the error of a fit: ``e = 1 - accuracy`` (classification) or ``e = RMSE`` (regression);
* the relative error reduction of A over B, ``(e_B - e_A) / e_B`` (positive: A makes fewer errors);
* win / tie / loss per dataset and the two-sided sign test over the datasets that are not ties;
* on the test rows of a classification table, how often the best tree model is wrong where a neural
  model is right (the room a weighted ensemble of the two has to gain);
* the model family of an AutoGluon model name, the training-row cap of P1, and the over-time rule.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Dict, Iterable, Mapping, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from .stats import pama

RMSE = "root_mean_squared_error"
TREE_FAMILIES = ("GBDT",)
#: model name prefix -> family (AutoGluon names a model ``<ag_name><suffix>_BAG_L<level>``)
_FAMILY_PREFIXES = (("LightGBM", "GBDT"), ("CatBoost", "GBDT"), ("XGBoost", "GBDT"), ("Maya", "MAYA"),
                    ("TabSwift", "TabSwift"), ("TabM", "TabM"), ("RealMLP", "RealMLP"),
                    ("WeightedEnsemble", "ensemble"))
NEURAL_FAMILIES = ("MAYA", "TabSwift", "TabM", "RealMLP")


def family(model_name: str) -> str:
    """``GBDT``, ``MAYA``, ``TabSwift``, ``TabM``, ``RealMLP``, ``ensemble`` or ``other``."""
    for prefix, fam in _FAMILY_PREFIXES:
        if model_name.startswith(prefix):
            return fam
    return "other"


def stack_level(model_name: str) -> Optional[int]:
    """The ``L<k>`` suffix of an AutoGluon model name (``CatBoost_BAG_L1`` -> 1), None without one."""
    head, sep, tail = model_name.rpartition("_L")
    return int(tail) if sep and tail.isdigit() else None


def base_name(model_name: str) -> str:
    """The name without AutoGluon's bagging/level suffix: ``Maya_d128_BAG_L1`` -> ``Maya_d128``."""
    for suffix in ("_BAG_L", "_L"):
        head, sep, tail = model_name.rpartition(suffix)
        if sep and tail.isdigit():
            return head
    return model_name


# ---- errors and comparisons ------------------------------------------------------------------------------
def error_of(score: float, metric: str) -> float:
    """``1 - accuracy`` for ``metric == "accuracy"``, the score itself for RMSE; other metrics are an error
    (the benchmark's relative error reduction is only defined for these two)."""
    score = float(score)
    if metric == "accuracy":
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"accuracy {score} outside [0, 1]")
        return 1.0 - score
    if metric in (RMSE, "rmse"):
        if score < 0:
            raise ValueError(f"RMSE {score} is negative")
        return score
    raise ValueError(f"no error is defined for metric {metric!r} (accuracy or {RMSE})")


def relative_error_reduction(e_a: float, e_b: float) -> float:
    """``(e_B - e_A) / e_B``: the share of B's error that A removes (0.1 = A makes 10 % fewer errors;
    negative = A is worse).  Both zero: 0.0.  ``e_B == 0 < e_A``: NaN (undefined; the report shows it
    as n/a and leaves it out of means)."""
    if e_a < 0 or e_b < 0:
        raise ValueError(f"errors must be >= 0, got e_A={e_a}, e_B={e_b}")
    if e_b == 0:
        return 0.0 if e_a == 0 else float("nan")
    return (e_b - e_a) / e_b


def outcome(e_a: float, e_b: float, rel_tol: float = 1e-9) -> str:
    """``"win"`` when A's error is lower, ``"loss"`` when higher, ``"tie"`` when equal up to float noise
    (accuracies on the same test rows are often exactly equal)."""
    if math.isclose(e_a, e_b, rel_tol=rel_tol, abs_tol=1e-12):
        return "tie"
    return "win" if e_a < e_b else "loss"


@dataclass
class WinTieLoss:
    wins: int
    ties: int
    losses: int
    p_value: float  #: two-sided sign test over the non-tied datasets (1.0 when all are ties)

    @property
    def n(self) -> int:
        return self.wins + self.ties + self.losses

    def __str__(self) -> str:
        return f"{self.wins}/{self.ties}/{self.losses} (sign test p = {self.p_value:.3g})"


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: P-value of ``wins`` successes in ``wins + losses`` fair coin flips
    (``scipy.stats.binomtest``); ties are left out beforehand, as the sign test prescribes."""
    from scipy.stats import binomtest

    n = wins + losses
    return 1.0 if n == 0 else float(binomtest(wins, n, 0.5, alternative="two-sided").pvalue)


def win_tie_loss(pairs: Iterable[Tuple[float, float]], rel_tol: float = 1e-9) -> WinTieLoss:
    """Wins, ties and losses of A against B over datasets, from ``(e_A, e_B)`` pairs, with the sign test."""
    outcomes = [outcome(a, b, rel_tol) for a, b in pairs]
    w, t, l = (outcomes.count(k) for k in ("win", "tie", "loss"))
    return WinTieLoss(w, t, l, sign_test(w, l))


def mean_finite(values: Iterable[float]) -> Tuple[float, int]:
    """Mean of the finite values and how many were left out (NaN / inf); NaN when none is finite."""
    vals = [float(v) for v in values]
    finite = [v for v in vals if math.isfinite(v)]
    return (float(np.mean(finite)) if finite else float("nan")), len(vals) - len(finite)


# ---- where the trees are wrong and a neural model is right ----------------------------------------------
def tree_wrong_neural_right(y_true: Sequence, tree_pred: Sequence,
                            neural_preds: Mapping[str, Sequence]) -> Dict[str, object]:
    """Counts on the test rows of a classification table.

    ``n``: rows; ``tree_wrong``: rows the tree model gets wrong; ``right_when_tree_wrong``: per neural
    model, of those rows how many it gets right; ``any_right_when_tree_wrong``: rows where the tree is
    wrong and at least one neural model is right; ``tree_right_when_all_wrong``: rows where every neural
    model is wrong and the tree is right (the converse, for scale).  With no neural model the neural
    counts are 0 and the converse count is undefined (None)."""
    y = np.asarray(y_true)
    t = np.asarray(tree_pred)
    if t.shape != y.shape:
        raise ValueError(f"tree predictions have shape {t.shape}, labels {y.shape}")
    tree_ok = t == y
    right = {}
    for name, pred in neural_preds.items():
        p = np.asarray(pred)
        if p.shape != y.shape:
            raise ValueError(f"predictions of {name!r} have shape {p.shape}, labels {y.shape}")
        right[name] = p == y
    any_right = np.logical_or.reduce(list(right.values())) if right else np.zeros_like(tree_ok)
    return {"n": int(len(y)), "tree_wrong": int((~tree_ok).sum()),
            "right_when_tree_wrong": {k: int((v & ~tree_ok).sum()) for k, v in right.items()},
            "any_right_when_tree_wrong": int((any_right & ~tree_ok).sum()),
            "tree_right_when_all_wrong": int((tree_ok & ~any_right).sum()) if right else None}


def best_by_validation(val_scores: Mapping[str, float], candidates: Iterable[str]) -> Optional[str]:
    """The candidate with the highest validation score (AutoGluon's sign: higher is better, RMSE negated);
    the first in ``candidates`` order on a tie; None when no candidate has a finite score."""
    best, best_score = None, -math.inf
    for m in candidates:
        s = val_scores.get(m)
        if s is not None and math.isfinite(float(s)) and float(s) > best_score:
            best, best_score = m, float(s)
    return best


def final_weights(row: Mapping) -> Dict[str, float]:
    """The members of the model AutoGluon picked (a result row's ``best_model``) with their weights, from the
    row's ``weights`` (weighted ensemble -> member -> weight); a picked model that is not an ensemble is its
    own single member with weight 1 (an ensemble without recorded weights has none)."""
    best = row.get("best_model")
    weights = (row.get("weights") or {}).get(best)
    if weights:
        return dict(weights)
    return {best: 1.0} if best and family(best) != "ensemble" else {}


def _fits(model_info: Mapping) -> list:
    """The infos of a model's fitted networks: a bag's children (``children_info``: its folds, or the one
    all-rows model of a bag fitted with ``refit_folds``), or the model itself."""
    return list((model_info.get("children_info") or {}).values()) or [model_info]


def prior_fallbacks(model_info: Mapping) -> int:
    """How many of a model's fitted networks predict the prior instead (MAYA's ``maya_fit["fallback"]``,
    TabSwift's ``tabswift_prior_check["fallback"]``), from AutoGluon's model info: a bag's children
    (``children_info``: its folds, or the one all-rows model of a bag fitted with ``refit_folds``, which
    repeats its folds' majority), or the model itself."""
    return sum(bool((c.get("maya_fit") or {}).get("fallback") or (c.get("tabswift_prior_check") or {}).get("fallback"))
               for c in _fits(model_info))


def maya_stops(model_info: Mapping) -> Dict[str, int]:
    """Why a MAYA model's networks stopped, counted over a bag's children (or the model itself): the rule of
    each fit's ``maya_fit["stop"]`` (``patience``, ``max_epochs``, ``time``, ...) and, as ``early``, how many
    ended before half of their time limit; children without a record are left out."""
    stops = [s for s in ((c.get("maya_fit") or {}).get("stop") for c in _fits(model_info)) if s]
    counts = Counter(str(s.get("rule")) for s in stops)
    early = sum(bool(s.get("stopped_early")) for s in stops)
    return {**dict(sorted(counts.items())), "early": early} if stops else {}


# ---- P1 sizes and the time-limit rule ---------------------------------------------------------------------
def p1_train_rows(n_rows: int, test_size: float = 0.20, val_size: float = 0.20) -> int:
    """Training rows P1 leaves of ``n_rows`` (sklearn's ``train_test_split`` rounds a float test share up)."""
    rest = n_rows - math.ceil(test_size * n_rows)
    return rest - math.ceil(val_size * rest)


def max_rows_for_train(max_train_rows: int, test_size: float = 0.20, val_size: float = 0.20) -> int:
    """The largest table size whose P1 split has at most ``max_train_rows`` training rows (10,000 -> 15,627:
    15,627 rows split 12,501 / 3,126, then 10,000 / 2,501; one row more gives 10,001)."""
    if max_train_rows < 1:
        raise ValueError(f"max_train_rows must be >= 1, got {max_train_rows}")
    n = int((max_train_rows + 2) / ((1 - test_size) * (1 - val_size))) + 2  # above the answer: rounding costs < 2 rows
    while p1_train_rows(n, test_size, val_size) > max_train_rows:
        n -= 1
    return n


def over_time(wall_s: float, time_limit: float, factor: float = 1.05, grace_s: float = 2.0) -> bool:
    """True when a fit ran past ``time_limit * factor + grace_s`` (the package's time-limit contract)."""
    return float(wall_s) > float(time_limit) * factor + grace_s


# ---- PAMA over the individual models of the fits --------------------------------------------------------
def model_score_matrix(scores: Mapping[str, Mapping[str, float]], higher_is_better: Mapping[str, bool]) -> pd.DataFrame:
    """datasets x models of test scores, oriented so that higher is better everywhere (RMSE negated);
    a model absent from a dataset is NaN there."""
    frame = pd.DataFrame({d: dict(s) for d, s in scores.items()}).T.astype(float)
    sign = np.array([1.0 if higher_is_better[d] else -1.0 for d in frame.index])
    return frame.mul(sign, axis=0).sort_index().sort_index(axis=1)


def pama_of_models(scores: Mapping[str, Mapping[str, float]], higher_is_better: Mapping[str, bool],
                   tolerance: float = 0.0) -> pd.Series:
    """PAMA (% of datasets where a model is among the best, ``stats.pama``) of the individual models;
    a model missing on a dataset (failed, skipped, not in that configuration) never counts there."""
    if not scores:
        return pd.Series(dtype=float)
    return pama(model_score_matrix(scores, higher_is_better), tolerance).sort_values(ascending=False,
                                                                                     kind="mergesort")
