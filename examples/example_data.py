"""Tables for the examples, with nothing but pandas and scikit-learn.

``load_table(name_or_path, label=None)`` returns ``(frame, label)`` for:
- a table that ships with scikit-learn: ``breast_cancer`` (binary), ``wine`` and ``digits`` (multiclass),
  ``diabetes`` (regression);
- a table that ships with this repository's tests (``plugin_tests/data``): ``telco_churn``, ``spambase``,
  ``qsar_biodeg`` (binary), ``satimage``, ``letter`` (multiclass), ``california_housing``, ``ames_housing``
  (regression);
- a dataset folder (``data.csv.gz`` + ``meta.json`` naming the ``target``);
- a CSV file (``label``: its target column, default the last column).

``split(frame, label, seed)`` makes the train / validation / test parts (64/16/20 %, stratified for a class
label) that the examples fit, tune and score on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Tuple

import pandas as pd
from sklearn.model_selection import train_test_split

REPO_TABLES = Path(__file__).resolve().parents[1] / "plugin_tests" / "data"
SKLEARN_TABLES = {"breast_cancer": "load_breast_cancer", "wine": "load_wine", "digits": "load_digits",
                  "diabetes": "load_diabetes"}


def load_table(source: str, label: Optional[str] = None, max_rows: Optional[int] = None,
               seed: int = 0) -> Tuple[pd.DataFrame, str]:
    if source in SKLEARN_TABLES:
        import sklearn.datasets

        frame = getattr(sklearn.datasets, SKLEARN_TABLES[source])(as_frame=True).frame
        target = "target"
    else:
        path = Path(source)
        if not path.exists() and (REPO_TABLES / source).is_dir():
            path = REPO_TABLES / source
        if path.is_dir():
            meta = json.loads((path / "meta.json").read_text())
            frame, target = pd.read_csv(path / meta.get("file", "data.csv.gz")), meta["target"]
        elif path.is_file():
            frame = pd.read_csv(path)
            target = frame.columns[-1]
        else:
            known = sorted(SKLEARN_TABLES) + sorted(p.name for p in REPO_TABLES.iterdir() if p.is_dir())
            raise SystemExit(f"{source!r} is neither a file, a dataset folder nor one of: {', '.join(known)}")
    if label is not None:
        if label not in frame.columns:
            raise SystemExit(f"label {label!r} is not a column of {source}: {list(frame.columns)}")
        target = label
    if max_rows is not None and len(frame) > max_rows:
        frame = frame.sample(n=max_rows, random_state=seed)
    return frame.reset_index(drop=True), target


def _is_class_label(y: pd.Series) -> bool:
    return y.dtype == object or y.nunique() <= 30


def split(frame: pd.DataFrame, label: str, seed: int = 0) -> Tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Train / validation / test = 64 / 16 / 20 % of the rows, stratified when the label is a class label
    whose every class has at least 2 rows."""
    def strat(part: pd.DataFrame):
        y = part[label]
        return y if _is_class_label(y) and y.value_counts().min() >= 2 else None

    rest, test = train_test_split(frame, test_size=0.2, random_state=seed, stratify=strat(frame))
    train, val = train_test_split(rest, test_size=0.2, random_state=seed, stratify=strat(rest))
    return train, val, test
