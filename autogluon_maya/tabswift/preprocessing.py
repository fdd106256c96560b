"""Table -> TabSwift row vectors (the paper's row token: numeric codes, per-column normalization, PCA above F_max, zero-padding).

Everything is fitted on the *context* (the labelled training rows the network will attend to) and then
frozen, so a query row's features never depend on which other rows are transformed with it.

Steps, in order:
1. ``TabularEncoder(numeric_transform="none")`` (shared with MAYA): numerics with +-inf as missing,
   median imputation and 0/1 missing indicators; categoricals as integer codes (0 = missing/unseen).
   The quantile transform is off because the normalization variants below are TabSwift's own and the
   ensemble needs the raw ("none") variant.  Codes of non-``category`` columns are re-ordered by
   value: the encoder numbers them by first appearance, which would make the features -- and so the
   predictions -- depend on the order of the context rows.
2. Constant columns (on the context) are dropped; none left -> ``ValueError``.
3. Per column: standardize with the context mean/std (clip at +-100), optionally Yeo-Johnson
   (``norm="power"``), then a two-stage outlier clip at +-``outlier_threshold`` sigma that compresses
   the excess logarithmically (keeps the order of extreme values but bounds their magnitude -- the
   network was pretrained on tables clipped the same way).
4. More than ``max_features`` columns -> PCA to min(max_features, n_context - 1) components, each
   z-scored on the context.  The output width depends only on the column count and the context size,
   never on the normalization variant, so ensemble members of both variants share one set of feature
   permutations.  ``max_features=None`` keeps every column: the ensemble then hands each member its
   own subset of at most F_max columns (``ensemble.py``, ``wide_features="subsets"``).
The network itself pads to F_max and rescales by F_max / F, so the output may be narrower than F_max.

``style="authors"`` follows the authors' inference code instead where it computes differently
(``docs/tabswift_vs_authors.md`` measures each difference):
- step 3's scale is std + 1e-6, the outlier statistics use ddof = 1, and a value beyond a bound b is
  capped at b +- log1p(|x|) (ours: the excess over b is compressed to log1p(excess), so the transform
  is continuous at b and a value just past the bound moves by less);
- a table wider than ``max_features`` is reduced *before* step 3: quantile transform to a normal,
  centring, PCA to ``max_features`` components, each standardized; the variant's standardization /
  power transform / clipping then runs on the components.
"""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np
import pandas as pd
from sklearn.decomposition import PCA
from sklearn.preprocessing import PowerTransformer

from autogluon_maya.common.preprocessing import TabularEncoder

NORM_METHODS = ("none", "power")
STYLES = ("ours", "authors")
_EPS = 1e-12


def _as_frame(X) -> pd.DataFrame:
    return X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X))


def _mean_std(z: np.ndarray):
    mean = z.mean(0)
    std = z.std(0)
    return mean, np.where(std > _EPS, std, 1.0)


class RowPreprocessor:
    """Fit on the context with ``fit``; ``transform`` returns float32 (n, F) with 1 <= F <= max_features
    (any F when ``max_features`` is None)."""

    def __init__(self, norm: str = "none", max_features: Optional[int] = 100, outlier_threshold: float = 4.0,
                 random_state: int = 0, style: str = "ours"):
        if norm not in NORM_METHODS:
            raise ValueError(f"norm must be one of {NORM_METHODS}, got {norm!r}")
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {style!r}")
        self.style = style
        self.norm = norm
        self.max_features = None if max_features is None else int(max_features)
        self.outlier_threshold = float(outlier_threshold)
        self.random_state = random_state
        self.encoder: Optional[TabularEncoder] = None

    # ---- fitting ------------------------------------------------------------------------------
    def fit_transform(self, X) -> np.ndarray:
        return self.fit(X).transform(X)

    def fit(self, X) -> "RowPreprocessor":
        """Encode, drop constant columns, (authors' style: reduce wide tables), standardize, optionally
        Yeo-Johnson, bound outliers, and project onto ``max_features`` principal components where wider."""
        raw = self._fit_encoding(_as_frame(X))
        z = self._fit_scaling(self._fit_reducer(raw))
        self._fit_bounds(z)
        self.n_features_out_ = self._fit_pca(self._clip(z))
        return self

    def _fit_encoding(self, X: pd.DataFrame) -> np.ndarray:
        """The encoder (categories in an order-invariant order) and the columns kept: the non-constant ones."""
        if X.shape[1] == 0:
            raise ValueError("TabSwift has zero usable features: the input table has no columns")
        self.encoder = TabularEncoder(numeric_transform="none").fit(X)
        for c in self.encoder.cat_cols:  # order-invariant codes (see module docstring)
            if not isinstance(X[c].dtype, pd.CategoricalDtype):
                cats = self.encoder.categories[c]
                self.encoder.categories[c] = pd.Index(sorted(cats, key=lambda v: (type(v).__name__, str(v))),
                                                      dtype=object)
        raw = self._encode(X, keep=None)
        self.keep_ = np.flatnonzero(np.ptp(raw, axis=0) > 0) if len(raw) else np.zeros(0, dtype=int)
        if self.keep_.size == 0:
            raise ValueError(f"TabSwift has zero usable features: all {raw.shape[1]} encoded columns "
                             f"(from {X.shape[1]} input columns) are constant or entirely missing in the "
                             f"{len(X)} context rows")
        return raw[:, self.keep_]

    def _fit_reducer(self, raw: np.ndarray) -> np.ndarray:
        """The authors' style on a table wider than ``max_features``: quantile-normal, centre, PCA, scale."""
        self.reducer_ = None
        if self.style == "authors" and self.max_features is not None and raw.shape[1] > self.max_features:
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import QuantileTransformer, StandardScaler

            self.reducer_ = make_pipeline(
                QuantileTransformer(output_distribution="normal", n_quantiles=min(len(raw), 1000),
                                    random_state=self.random_state),
                StandardScaler(with_std=False),
                PCA(n_components=max(1, min(self.max_features, len(raw) - 1)), random_state=self.random_state),
                StandardScaler())
            raw = self.reducer_.fit_transform(raw)
        return raw

    def _fit_scaling(self, raw: np.ndarray) -> np.ndarray:
        """Standardize (clipped to +-100), then Yeo-Johnson for ``norm="power"``."""
        self.mean_, self.std_ = _mean_std(raw)
        if self.style == "authors":
            self.std_ = raw.std(0) + 1e-6
        z = np.clip((raw - self.mean_) / self.std_, -100, 100)
        self.power_ = None
        if self.norm == "power":
            self.power_ = PowerTransformer(method="yeo-johnson", standardize=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                z = np.nan_to_num(self.power_.fit_transform(z))
        return z

    def _fit_bounds(self, z: np.ndarray) -> None:
        """Two-stage outlier bounds: the second mean/std ignores the first stage's outliers, which would inflate
        it."""
        t = self.outlier_threshold
        if self.style == "authors":  # sample std (ddof = 1), floored at 1e-6
            ddof = 1 if len(z) > 1 else 0
            m1, s1 = z.mean(0), np.maximum(z.std(0, ddof=ddof), 1e-6)
            inliers = np.where(np.abs(z - m1) <= t * s1, z, np.nan)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a column with no inlier left: nan, like the authors'
                m2, s2 = np.nanmean(inliers, 0), np.maximum(np.nanstd(inliers, 0, ddof=ddof), 1e-6)
        else:
            m1, s1 = _mean_std(z)
            inlier = np.abs(z - m1) <= t * s1
            cnt = np.maximum(inlier.sum(0), 1)
            m2 = np.where(inlier, z, 0).sum(0) / cnt
            s2 = np.sqrt(np.where(inlier, (z - m2) ** 2, 0).sum(0) / cnt)
            s2 = np.where(s2 > _EPS, s2, s1)
        self.lower_, self.upper_ = m2 - t * s2, m2 + t * s2

    def _fit_pca(self, z: np.ndarray) -> int:
        """PCA onto ``max_features`` components where wider; returns the output width."""
        self.pca_ = None
        if self.max_features is not None and z.shape[1] > self.max_features:
            n_comp = max(1, min(self.max_features, len(z) - 1))
            self.pca_ = PCA(n_components=n_comp, random_state=self.random_state).fit(z)
            std = self.pca_.transform(z).std(0)
            # components without variance (context rank < n_comp) stay ~0 instead of amplified noise
            self.pca_std_ = np.where(std > 1e-6 * max(float(std.max()), _EPS), std, 1.0)
            z = z[:, :n_comp]
        return z.shape[1]

    # ---- transform ----------------------------------------------------------------------------
    def _encode(self, X: pd.DataFrame, keep) -> np.ndarray:
        enc = self.encoder.transform(X)
        raw = np.concatenate([enc.x_num.astype(np.float64), enc.x_cat.astype(np.float64)], axis=1)
        return raw if keep is None else raw[:, keep]

    def _clip(self, z: np.ndarray) -> np.ndarray:
        hi, lo = self.upper_, self.lower_
        if getattr(self, "style", "ours") == "authors":  # cap beyond a bound b at b +- log1p(|x|)
            z = np.maximum(lo - np.log1p(np.abs(z)), z)
            return np.minimum(hi + np.log1p(np.abs(z)), z)
        z = np.where(z > hi, hi + np.log1p(np.maximum(z - hi, 0)), z)
        return np.where(z < lo, lo - np.log1p(np.maximum(lo - z, 0)), z)

    def transform(self, X) -> np.ndarray:
        """Row-wise and stateless: the fitted statistics are never updated."""
        if self.encoder is None:
            raise RuntimeError("RowPreprocessor.transform called before fit")
        raw = self._encode(_as_frame(X), self.keep_)
        if getattr(self, "reducer_", None) is not None:
            raw = self.reducer_.transform(raw)
        z = np.clip((raw - self.mean_) / self.std_, -100, 100)
        if self.power_ is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                z = np.nan_to_num(self.power_.transform(z))
        z = self._clip(z)
        if self.pca_ is not None:
            z = self.pca_.transform(z) / self.pca_std_
        return np.nan_to_num(z).astype(np.float32)


def screen_columns(x: np.ndarray, y: np.ndarray, classification: bool, alpha: float = 0.05) -> np.ndarray:
    """Columns of a context ``x`` whose univariate link to ``y`` is significant, strongest first.

    For tables wider than F_max (the network sees at most F_max columns per member): a rank-based
    ANOVA F (classification) or rank correlation F (regression) per column, Benjamini-Hochberg at
    ``alpha`` over all columns.  Ranks make it invariant to the normalization variant and robust to
    skewed counts.  Returns all columns (strongest first) when fewer than 2 pass -- a tiny context
    has no power, and then the members' random subsets are the better bet than a guess.
    Only the context is used, never the queries."""
    from scipy.stats import rankdata
    from sklearn.feature_selection import f_classif, f_regression

    ranks = rankdata(x, axis=0)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if classification:
            score, pval = f_classif(ranks, y)
        else:
            score, pval = f_regression(ranks, rankdata(y))
    score, pval = np.nan_to_num(score, nan=0.0), np.nan_to_num(pval, nan=1.0)
    order = np.argsort(-score, kind="stable")
    m = len(pval)
    passed = np.sort(pval) <= alpha * np.arange(1, m + 1) / m
    n_sig = int(np.flatnonzero(passed).max()) + 1 if passed.any() else 0
    return order[:n_sig] if n_sig >= 2 else order


__all__ = ["NORM_METHODS", "RowPreprocessor", "STYLES", "screen_columns"]
