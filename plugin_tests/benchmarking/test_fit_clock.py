"""ModelWallClock: per-model wall time inside one TabularPredictor.fit, on a tiny table (a LightGBM that fits,
one that fails, and the weighted ensemble)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from benchlib.fit_clock import ModelWallClock


def test_wall_clock_records_every_started_model(tmp_path):
    from autogluon.tabular import TabularPredictor

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=200), "b": rng.normal(size=200)})
    df["y"] = (df["a"] + df["b"] > 0).astype(int)
    ticks = itertools.count()
    clock = ModelWallClock(clock=lambda: float(next(ticks)))  # every reading one "second" later
    predictor = TabularPredictor("y", problem_type="binary", path=str(tmp_path / "ag"), verbosity=0).fit(
        df, hyperparameters={"GBM": [{"num_boost_round": 5}, {"num_boost_round": 5, "objective": "no-such-objective",
                                                                "ag_args": {"name_suffix": "Bad"}}]}, time_limit=60,
        num_cpus=1, num_gpus=0, callbacks=[clock])
    rec = clock.records
    assert set(rec) == {"LightGBM", "LightGBMBad", "WeightedEnsemble_L2"}
    # before and after read the clock once each, so each model took exactly one tick
    assert all(r["wall_s"] == 1.0 for r in rec.values())
    assert rec["LightGBM"]["fitted"] and rec["WeightedEnsemble_L2"]["fitted"]
    assert not rec["LightGBMBad"]["fitted"]  # LightGBM rejects the objective
    assert rec["LightGBM"]["allotted_s"] is not None and rec["LightGBM"]["allotted_s"] <= 60
    assert "LightGBMBad" in predictor.model_failures()["model"].tolist()
