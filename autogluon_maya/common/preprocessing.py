"""Table -> tensors, shared by MAYA and TabSwift.

Fitted on the training rows only (never on validation or test data), then frozen:
- numerics: +-inf treated as missing; a 0/1 missing indicator for every column that had a missing
  value in training; median imputation; then one of ``NUMERIC_TRANSFORMS`` (by default sklearn's
  ``QuantileTransformer`` to a normal distribution);
- categoricals (pandas ``category``/``object``/``string``): integer codes 1..K from the training
  values; code 0 is reserved for missing and unseen values, so new categories at predict time are
  handled instead of crashing or silently aliasing another category.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import pandas as pd
from sklearn.preprocessing import MinMaxScaler, QuantileTransformer, StandardScaler


@dataclass
class EncodedTable:
    x_num: np.ndarray  # float32 (n, n_num), finite
    x_cat: np.ndarray  # int64 (n, n_cat), 0 = missing/unseen

    def __len__(self) -> int:
        return self.x_num.shape[0]


def _is_categorical(s: pd.Series) -> bool:
    return isinstance(s.dtype, pd.CategoricalDtype) or s.dtype == object or pd.api.types.is_string_dtype(s.dtype)


# What each numeric transform is for (all fitted on the training rows):
# - "quantile": quantile-normal, as FT-Transformer; robust to heavy tails and outliers, but it bends every feature
#   to one shape: a pixel that is 0 in 90 % of the rows maps 0 -> -0.1, 1 -> +1.3 and 16 -> +3.7, so a faint and a
#   full stroke look alike.
# - "minmax": per feature to [-1, 1], values outside the training range clipped to it.  Linear and bounded: for
#   tables whose features share a unit and a range (pixel counts, sensor readings) it keeps the geometry that
#   makes nearest neighbours work (5-NN on digits, P1 seed 0: 0.969 raw vs 0.947 quantile-normal).  One outlier
#   squeezes the rest of its column, so it is a poor choice for heavy-tailed columns (incomes, counts).
# - "minmax_or_quantile": per feature, "minmax" where the range is not set by a few outliers (the central 98 % of
#   the training values span at least half of it), "quantile" for the rest: on the whole tables, satimage's 36
#   band values and letter's 15 of 16 take minmax, otto's 93 counts and spambase's 56 of 57 frequencies quantile.
# - "standard": z-score with the training mean and standard deviation.
# - "none": the values as they are (after imputation).
NUMERIC_TRANSFORMS = ("quantile", "minmax", "minmax_or_quantile", "standard", "none")
CENTRAL_RANGE_SHARE = 0.5


def numeric_columns(X: pd.DataFrame) -> List[str]:
    """The columns :class:`TabularEncoder` treats as numeric (every column that is not categorical)."""
    return [c for c in X.columns if not _is_categorical(X[c])]


def numeric_values(X: pd.DataFrame) -> np.ndarray:
    """``X`` as float64, with what is not a finite number (NaN, +-inf, text that does not parse) as NaN."""
    num = X.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    num[~np.isfinite(num)] = np.nan
    return num


def numeric_width(X: pd.DataFrame) -> int:
    """How many numeric inputs ``TabularEncoder().fit(X)`` gives a network (its ``n_num``): one per numeric
    column and a missing indicator for each that has a missing value.  Column by column, so that a memory
    estimate does not copy the whole table."""
    cols = numeric_columns(X)
    return len(cols) + sum(int(np.isnan(numeric_values(X[[c]])).any()) for c in cols)


def _minmax() -> MinMaxScaler:
    return MinMaxScaler(feature_range=(-1, 1), clip=True)


class MinMaxOrQuantile:
    """Min-max for the columns whose range the bulk of the values fills, quantile-normal for the others.

    A column chooses by ``(q99 - q01) / (max - min) >= CENTRAL_RANGE_SHARE`` on the training rows; a constant
    column takes min-max (it maps to a constant either way).  Each transformer is fitted on and applied to its own
    columns only (both work column by column, so the result is the same as transforming every column twice and
    picking, at half the cost on the prediction path)."""

    def __init__(self, quantile: QuantileTransformer):
        self.quantile = quantile
        self.minmax = _minmax()
        self.minmax_cols: Optional[np.ndarray] = None

    def _parts(self):
        return ((self.minmax, self.minmax_cols), (self.quantile, ~self.minmax_cols))

    def fit(self, num: np.ndarray) -> "MinMaxOrQuantile":
        low, high = np.quantile(num, [0.01, 0.99], axis=0)
        span = num.max(0) - num.min(0)
        self.minmax_cols = (span <= 0) | ((high - low) >= CENTRAL_RANGE_SHARE * np.where(span > 0, span, 1.0))
        for transformer, cols in self._parts():
            if cols.any():
                transformer.fit(num[:, cols])
        return self

    def transform(self, num: np.ndarray) -> np.ndarray:
        out = np.empty(num.shape, dtype=np.float64)
        for transformer, cols in self._parts():
            if cols.any():
                out[:, cols] = transformer.transform(num[:, cols])
        return out


@dataclass
class TabularEncoder:
    """Fit once on training rows; ``transform`` any later frame with the same columns."""

    numeric_transform: str = "quantile"
    n_quantiles: int = 1000
    random_state: int = 0
    num_cols: List[str] = field(default_factory=list)
    cat_cols: List[str] = field(default_factory=list)
    nan_indicator_cols: List[str] = field(default_factory=list)
    medians: Optional[np.ndarray] = None
    categories: Dict[str, pd.Index] = field(default_factory=dict)
    _qt: Optional[object] = None  # the fitted sklearn transformer of the numerics

    def __setstate__(self, state: dict):
        """An encoder pickled before ``numeric_transform`` existed held ``quantile_transform`` (True/False): name
        what it does in today's terms, so a loaded model reports the transform it applies."""
        if "numeric_transform" not in state:
            state["numeric_transform"] = "quantile" if state.pop("quantile_transform", True) else "none"
        self.__dict__.update(state)

    def fit(self, X: pd.DataFrame) -> "TabularEncoder":
        if len(X) == 0:
            raise ValueError("Cannot fit the encoder on an empty table")
        if self.numeric_transform not in NUMERIC_TRANSFORMS:
            raise ValueError(f"numeric_transform must be one of {NUMERIC_TRANSFORMS}, got {self.numeric_transform!r}")
        self.num_cols = numeric_columns(X)
        self.cat_cols = [c for c in X.columns if c not in self.num_cols]
        num = self._numeric(X)
        missing = np.isnan(num)
        self.nan_indicator_cols = [c for c, m in zip(self.num_cols, missing.any(0)) if m]
        with warnings.catch_warnings():  # an all-missing column warns "All-NaN slice"
            warnings.simplefilter("ignore", RuntimeWarning)
            med = np.nanmedian(num, axis=0) if num.shape[0] else np.zeros(num.shape[1])
        self.medians = np.nan_to_num(med, nan=0.0)  # an all-missing column imputes to 0
        if num.shape[1] and self.numeric_transform != "none":
            quantile = QuantileTransformer(output_distribution="normal", subsample=10**9, random_state=self.random_state,
                                           n_quantiles=max(1, min(self.n_quantiles, len(X))))
            self._qt = {"quantile": quantile, "minmax": _minmax(), "minmax_or_quantile": MinMaxOrQuantile(quantile),
                        "standard": StandardScaler()}[self.numeric_transform].fit(self._impute(num))
        for c in self.cat_cols:
            values = X[c].dropna()
            cats = X[c].cat.categories if isinstance(X[c].dtype, pd.CategoricalDtype) else None
            uniq = pd.Index(values.unique())
            # keep the categories seen in training, in the dtype's order when there is one
            self.categories[c] = pd.Index([v for v in cats if v in set(uniq)]) if cats is not None else uniq
        return self

    @property
    def n_num(self) -> int:
        return len(self.num_cols) + len(self.nan_indicator_cols)

    @property
    def cat_cardinalities(self) -> List[int]:
        return [len(self.categories[c]) for c in self.cat_cols]

    def _numeric(self, X: pd.DataFrame) -> np.ndarray:
        if not self.num_cols:
            return np.zeros((len(X), 0))
        return numeric_values(X[self.num_cols])

    def _impute(self, num: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(num), self.medians, num)

    def transform(self, X: pd.DataFrame) -> EncodedTable:
        missing_cols = [c for c in self.num_cols + self.cat_cols if c not in X.columns]
        if missing_cols:
            raise KeyError(f"Columns seen in training are missing from the input: {missing_cols}")
        num = self._numeric(X)
        indicators = np.isnan(num[:, [self.num_cols.index(c) for c in self.nan_indicator_cols]])
        num = self._impute(num)
        if self._qt is not None:
            num = self._qt.transform(num)
        x_num = np.concatenate([num, indicators.astype(np.float64)], axis=1).astype(np.float32)
        x_cat = np.zeros((len(X), len(self.cat_cols)), dtype=np.int64)
        for i, c in enumerate(self.cat_cols):
            # get_indexer gives -1 for unseen and missing values -> reserved code 0
            x_cat[:, i] = self.categories[c].get_indexer(X[c].astype(object)) + 1
        return EncodedTable(x_num=x_num, x_cat=x_cat)


class TargetScaler:
    """Standardizes a regression target with the training mean/std.

    A constant target (std 0) trains on zeros and maps every output back to that constant exactly,
    instead of passing on whatever small value an undertrained network emits.
    """

    def __init__(self, y: np.ndarray):
        y = np.asarray(y, dtype=np.float64)
        self.mean = float(np.mean(y))
        std = float(np.std(y))
        self.constant = not (std > 0 and np.isfinite(std))
        self.std = 1.0 if self.constant else std

    def transform(self, y) -> np.ndarray:
        return ((np.asarray(y, dtype=np.float64) - self.mean) / self.std).astype(np.float32)

    def inverse(self, z) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        return np.full_like(z, self.mean) if self.constant else z * self.std + self.mean
