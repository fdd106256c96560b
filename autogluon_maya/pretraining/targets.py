"""Unified targets: one synthetic output supervises both TabSwift heads.

tabicl's prior returns either a class target or a regression target, never both for the same task.
We ask it for the standardized regression target and derive the class target ourselves, the way its
own classification prior does it: draw C (2 with probability 1/2, else uniform on 2..C_max), cut the
target at C - 1 thresholds ("rank": the targets of random rows; "value": N(0, 1) draws), count the
thresholds each row exceeds and relabel the bins with a random permutation (class ids are nominal; an
unpermuted discretization would teach the network that id order means target order).

So, per task, the class target is a monotone discretization of the regression target up to a
relabelling -- sorting the rows by target makes every class one contiguous run.  Every class must
appear among the support rows (the network can only predict labels it was shown); draws that violate
this are retried, then fall back to equal-frequency bins of the support targets.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np


def _draw_n_classes(rng: np.random.Generator, max_classes: int) -> int:
    return 2 if max_classes == 2 or rng.random() < 0.5 else int(rng.integers(2, max_classes + 1))


def _bins(y: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    return (y[:, None] > np.sort(thresholds)[None, :]).sum(1)


def discretize(y: np.ndarray, n_support: int, max_classes: int, rng: np.random.Generator,
               max_tries: int = 10) -> Tuple[np.ndarray, int]:
    """Class ids (len(y),) and their count for one task's standardized target ``y``.

    All ``n_classes`` ids occur among the first ``n_support`` rows.  A constant target gives one class.
    """
    y = np.asarray(y, dtype=np.float64)
    support = y[:n_support]
    for _ in range(max_tries):
        c = _draw_n_classes(rng, max_classes)
        if rng.random() < 0.5:
            thresholds = y[rng.choice(len(y), size=c - 1, replace=False)]
        else:
            thresholds = rng.standard_normal(c - 1)
        bins = _bins(y, thresholds)
        present = np.unique(bins[:n_support])
        if len(present) == c and np.isin(bins, present).all():
            break
    else:  # equal-frequency bins of the support rows; ties in y may merge bins
        c = _draw_n_classes(rng, max_classes)
        thresholds = np.unique(np.quantile(support, np.linspace(0, 1, c + 1)[1:-1]))
        thresholds = thresholds[thresholds < support.max()]
        bins = _bins(y, thresholds)
        c = len(thresholds) + 1
        # bins that no support row fell into (possible only through ties) are merged into a neighbour
        present = np.unique(bins[:n_support])
        bins = present[np.clip(np.searchsorted(present, bins), 0, len(present) - 1)]
        _, bins = np.unique(bins, return_inverse=True)
        c = int(bins.max()) + 1
    relabel = rng.permutation(c)
    return relabel[bins].astype(np.int64), int(c)


def is_monotone_discretization(y: np.ndarray, classes: np.ndarray) -> bool:
    """True when, with rows sorted by ``y``, each class occupies one contiguous run (ties allowed)."""
    order = np.argsort(y, kind="stable")
    cs = np.asarray(classes)[order]
    seen, prev = set(), None
    for c in cs:
        if c != prev:
            if c in seen:  # equal targets always share a bin, so ties cannot cause this
                return False
            seen.add(c)
            prev = c
    return True


__all__ = ["discretize", "is_monotone_discretization"]
