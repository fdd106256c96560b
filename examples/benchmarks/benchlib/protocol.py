"""Benchmark protocol P1 and dataset loading, shared by every script in ``examples/benchmarks/``.

P1: a 64/16/20 train/validation/test split (stratified for classification), seeded; the validation
part is passed to AutoGluon as ``tuning_data``; test metric accuracy (classification) or RMSE
(regression).  Datasets are folders holding ``data.csv.gz`` + ``meta.json`` (task and target).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

import pandas as pd
from sklearn.model_selection import train_test_split

DATASETS_ENV = "AUTOGLUON_MAYA_DATASETS"


def default_datasets_dir() -> Path:
    """``$AUTOGLUON_MAYA_DATASETS``, else ``datasets`` in the working directory (``--data-dir`` overrides both in
    every script); a missing folder is reported by the loader, naming this path."""
    env = os.environ.get(DATASETS_ENV)
    return Path(env) if env else Path.cwd() / "datasets"


@dataclass
class Dataset:
    name: str
    data: pd.DataFrame
    target: str
    task: str  # "binary" | "multiclass" | "regression"

    @property
    def is_classification(self) -> bool:
        return self.task in ("binary", "multiclass")


def infer_task(y: pd.Series) -> str:
    """binary (2 values), multiclass (text labels or <= 20 values), else regression."""
    n_unique = y.nunique()
    return "binary" if n_unique == 2 else ("multiclass" if y.dtype == object or n_unique <= 20 else "regression")


def load_dataset(path: str | Path, max_rows: Optional[int] = None, seed: int = 0,
                 label: Optional[str] = None) -> Dataset:
    """Read a dataset folder (``data.csv.gz`` + ``meta.json``) or a plain CSV (target = ``label``, default
    its last column). The task is inferred from the target column actually used."""
    path = Path(path)
    if path.is_dir():
        meta = json.loads((path / "meta.json").read_text())
        df = pd.read_csv(path / meta.get("file", "data.csv.gz"))
        ds = Dataset(path.name, df, meta["target"], meta["task"])
    else:
        df = pd.read_csv(path)
        ds = Dataset(path.stem.split(".")[0], df, df.columns[-1], "")
    if label is not None and label != ds.target:
        if label not in ds.data.columns:
            raise KeyError(f"label {label!r} is not a column of {path}: {list(ds.data.columns)}")
        ds.target, ds.task = label, ""
    if not ds.task:
        ds.task = infer_task(ds.data[ds.target])
    if max_rows is not None and len(ds.data) > max_rows:
        strat = ds.data[ds.target] if ds.is_classification else None
        ds.data, _ = train_test_split(ds.data, train_size=max_rows, random_state=seed, stratify=_safe_strat(strat))
    ds.data = ds.data.reset_index(drop=True)
    return ds


def _safe_strat(y: Optional[pd.Series]) -> Optional[pd.Series]:
    """Stratify only when every class has at least 2 rows (sklearn refuses otherwise)."""
    if y is None or y.value_counts().min() < 2:
        return None
    return y


def p1_split(ds: Dataset, seed: int) -> Tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """64/16/20 train/val/test split, stratified for classification."""
    y = ds.data[ds.target] if ds.is_classification else None
    rest, test = train_test_split(ds.data, test_size=0.20, random_state=seed, stratify=_safe_strat(y))
    y_rest = rest[ds.target] if ds.is_classification else None
    train, val = train_test_split(rest, test_size=0.20, random_state=seed, stratify=_safe_strat(y_rest))
    return train, val, test


def p1_metric(task: str) -> str:
    return "accuracy" if task in ("binary", "multiclass") else "root_mean_squared_error"
