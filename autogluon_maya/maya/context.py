"""The inference context: which training rows the IAIL decoder attends over at prediction time (Eq. 14).

The paper's context is every training row, so predicting costs O(query rows x training rows).  With
``max_context_rows=N`` a fit draws N of its training rows once, from its own seed, and encodes only those as the
context of every validation pass and of the final model; training batches (each its own context, Eq. 13) still
cover every row.  Classification draws by class (every class keeps a row where N allows, the shares follow the
training shares), regression and quantile uniformly.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

# mixed into the fit's seed, so that the draw's stream is not the one member 0 shuffles its batches with
CONTEXT_SEED_SALT = 0x6D617961


def _stratified_counts(counts: np.ndarray, cap: int) -> np.ndarray:
    """Rows per class, summing to ``cap`` (< counts.sum()): one per class where ``cap`` allows, the rest shared in
    proportion to the rows each class has left, by largest remainder (ties to the lower class code)."""
    base = 1 if cap >= len(counts) else 0
    left = counts - base
    rest = cap - base * len(counts)
    share = rest * left / left.sum()
    out = np.floor(share).astype(np.int64)
    # the leftover rows go to the largest fractional parts; a class with one gets ceil(share) <= its rows left
    order = np.argsort(-(share - out), kind="stable")
    out[order[:rest - int(out.sum())]] += 1
    return base + out


def draw_context(y: np.ndarray, cap: Optional[int], seed: int, classification: bool) -> Optional[np.ndarray]:
    """The sorted indices of the training rows that form the inference context, or None for every row (no cap,
    or no more rows than the cap).  ``y``: class codes (classification) or targets; the same (y, cap, seed)
    always draws the same rows."""
    n = len(y)
    if cap is None or n <= cap:
        return None
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, CONTEXT_SEED_SALT])
    if not classification:
        return np.sort(rng.choice(n, size=cap, replace=False))
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    per_class = _stratified_counts(np.bincount(codes, minlength=len(classes)), cap)
    picked = [rng.choice(np.flatnonzero(codes == c), size=k, replace=False)
              for c, k in enumerate(per_class) if k]
    return np.sort(np.concatenate(picked))
