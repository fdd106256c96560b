"""``sample_weight``: MAYA weights its loss by it; TabSwift ignores it and says so.

The MAYA table carries no label signal without the weights: along x the labels alternate 0, 1, 0, 1,
so every neighbourhood is 50/50, but the weights favour class 1 where x > 0 and class 0 where x < 0.
A model that uses the weights predicts P(y=1) high for x > 0 and low for x < 0; one that ignores them
has nothing to learn (the unweighted control shows the table is built that way).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from autogluon_maya import MayaModel, TabSwiftModel
from plugin_tests.resources import fit_on_cores

TINY = {"max_epochs": 25, "hidden_size": 16, "num_heads": 2, "num_layers": 1, "batch_size": 64, "patience": None}


def _weighted_table(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.uniform(-1, 1, size=n), "noise": rng.normal(size=n)})
    y = np.empty(n, dtype=int)
    y[np.argsort(X["x"].to_numpy())] = np.tile([0, 1], n // 2)  # alternating along x: 50/50 everywhere
    y = pd.Series(y, name="y")
    favoured = np.where(X["x"] > 0, 1, 0)
    w = np.where(y.to_numpy() == favoured, 9.0, 1.0)
    return X, y, w


def _fit_maya(tmp_path, X, y, w, name):
    model = MayaModel(path=str(tmp_path / name), name=name, problem_type="binary", eval_metric="roc_auc",
                      hyperparameters=TINY)
    return fit_on_cores(model, 1, X=X, y=y, sample_weight=w)


def test_maya_loss_uses_sample_weight(tmp_path):
    X, y, w = _weighted_table()
    X_test, _, _ = _weighted_table(seed=1)
    right = (X_test["x"] > 0).to_numpy()  # where the weights favour class 1

    def gap(model):  # mean P(y=1) where the weights favour 1 minus where they favour 0
        p = model.predict_proba(X_test)
        return float(p[right].mean() - p[~right].mean())

    weighted = _fit_maya(tmp_path, X, y, w, "w")
    assert gap(weighted) > 0.5, f"weighted fit: P(y=1) gap {gap(weighted):.3f} between the two halves"
    assert roc_auc_score(right, weighted.predict_proba(X_test)) > 0.9
    unweighted = gap(_fit_maya(tmp_path, X, y, None, "u"))
    assert abs(unweighted) < 0.2, f"control: without weights the table should carry no signal (gap {unweighted:.3f})"


def test_tabswift_warns_that_it_ignores_sample_weight(tmp_path, caplog):
    X, y, w = _weighted_table(200)
    model = TabSwiftModel(path=str(tmp_path / "ts"), name="ts", problem_type="binary", eval_metric="accuracy",
                          hyperparameters={"n_estimators": 1, "max_context_rows": 128})
    name = "autogluon.ext.autogluon_maya.tabswift.model"
    ours = logging.getLogger(name)
    # AutoGluon's loggers may not propagate to the root logger, and an earlier TabularPredictor(verbosity=0)
    # raises the "autogluon" level: attach the handler and set the level on our logger itself
    ours.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.WARNING, logger=name):
            fit_on_cores(model, 1, X=X, y=y, sample_weight=w)
        assert "ignores sample_weight" in caplog.text
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger=name):
            fit_on_cores(model, 1, X=X, y=y)
        assert "sample_weight" not in caplog.text  # no warning when no weights were given
    finally:
        ours.removeHandler(caplog.handler)
