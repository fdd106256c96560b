"""A TabSwift predictor saved by an earlier version of the package (``saved_tabswift/``, written by its
``make.py`` at commit 60ad905) loads with this version and predicts bit for bit what it predicted then, from the
context caches it saved."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from autogluon.tabular import TabularPredictor

HERE = Path(__file__).resolve().parent / "saved_tabswift"


def test_a_predictor_saved_by_an_earlier_version_predicts_the_same(tmp_path):
    import shutil
    import sys

    sys.path.insert(0, str(HERE))
    try:
        from make import rows
    finally:
        sys.path.remove(str(HERE))
    path = tmp_path / "predictor"
    shutil.copytree(HERE / "predictor", path)  # loading may write beside the files
    pred = TabularPredictor.load(str(path), verbosity=0, require_py_version_match=False)
    assert pred.model_names() == ["TabSwift"]
    _, query, _ = rows()
    got = pred.predict_proba(query, as_multiclass=False).to_numpy()
    want = np.load(HERE / "proba.npy")
    assert got.dtype == want.dtype and np.array_equal(got, want), np.abs(got - want).max()
