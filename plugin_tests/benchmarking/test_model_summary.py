"""The benchmark row's copy of a model's own fit summary (``runner._model_summary``) with real fits."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from autogluon.tabular import TabularPredictor

import autogluon_maya  # noqa: F401  (registers MAYA and TABSWIFT)
from benchlib.runner import _model_summary


def test_summaries_of_maya_and_tabswift_fit_in_a_row(tmp_path):
    """MAYA keeps one dict per member, TabSwift a member count under the same key: both must give a
    JSON-writable row (a count once crashed every TabSwift row of the zero-shot suite)."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(240, 3)), columns=list("abc"))
    data = X.assign(y=(X["a"] + X["b"] > 0).astype(int))
    predictor = TabularPredictor(label="y", path=str(tmp_path / "p"), verbosity=0).fit(
        data, hyperparameters={"MAYA": {"max_epochs": 2, "hidden_size": 16, "num_heads": 2, "num_layers": 1},
                               "TABSWIFT": {"n_estimators": 1, "fine_tune_steps": 2, "fine_tune_min_steps": 2}},
        fit_weighted_ensemble=False, num_cpus=1, num_gpus=0)
    rows = {name: _model_summary(predictor, name) for name in predictor.model_names()}
    assert set(rows) == {"Maya", "TabSwift"}
    for row in rows.values():
        assert "fit_summary_error" not in row, row
        json.dumps(row)
    maya = rows["Maya"]
    assert maya["fit_epochs"] == 2 and maya["fit_stop_reason"] == "max_epochs"
    assert isinstance(maya["fit_members"], list) and maya["fit_members"][0]["epochs"] == 2
    assert "fit_members" in rows["TabSwift"] and not isinstance(rows["TabSwift"]["fit_members"], list)
    # fine_tune="auto" with validation rows and no time limit fine-tunes; the row says so and why
    assert rows["TabSwift"]["fit_fine_tune"]["rule"] == "no_time_limit"
    assert rows["TabSwift"]["fit_fine_tune"]["steps_run"] >= 1
