"""Writes the saved MAYA predictor that ``plugin_tests/maya/test_saved_predictor.py`` loads: a tiny fit on 240
rows of ``telco_churn`` (numeric and categorical features, so the piecewise embedding's bin edges and the
categorical embeddings are both pickled), saved without its training data, and its predicted probabilities on
60 other rows.  The test then proves that a predictor pickled by an earlier version of the package loads and
predicts bit for bit the same.  Run from the repository root: ``python plugin_tests/maya/saved_maya/make.py``."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "data" / "telco_churn" / "data.csv.gz"
HP = {"MAYA": {"max_epochs": 4, "hidden_size": 16, "num_heads": 2, "ensemble_members": 2, "parallel_members": 1,
               "adaptive_threads": False, "random_seed": 0}}


def rows() -> tuple:
    """(training rows, validation rows, query rows without the label), a fixed sample of the shipped table."""
    df = pd.read_csv(DATA).sample(n=360, random_state=0).reset_index(drop=True)
    return df.iloc[:240], df.iloc[240:300], df.iloc[300:].drop(columns="Churn").reset_index(drop=True)


def main():
    import torch
    from autogluon.tabular import TabularPredictor

    import autogluon_maya  # noqa: F401  (registers MAYA)

    torch.set_num_threads(1)
    out = HERE / "predictor"
    shutil.rmtree(out, ignore_errors=True)
    train, val, query = rows()
    pred = TabularPredictor(label="Churn", path=str(out), verbosity=0).fit(
        train, tuning_data=val, hyperparameters=HP, fit_weighted_ensemble=False, raise_on_model_failure=True,
        num_cpus=1, num_gpus=0)
    model = pred._trainer.load_model("Maya")
    assert len(model.model) == 2, "the fixture must pickle trained networks, not a fall back to the prior"
    pred.save_space()
    shutil.rmtree(out / "logs", ignore_errors=True)
    np.save(HERE / "proba.npy", pred.predict_proba(query, as_multiclass=False).to_numpy())


if __name__ == "__main__":
    main()
