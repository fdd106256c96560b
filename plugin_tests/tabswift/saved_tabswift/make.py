"""Writes the saved TabSwift predictor that ``plugin_tests/tabswift/test_saved_predictor.py`` loads: a tiny
zero-shot fit (shipped checkpoint, two members, 128 context rows) on 240 rows of ``qsar_biodeg`` without
validation rows, so that its members' context caches are saved with it, and its predicted probabilities on 60
other rows as the loaded predictor computes them.  The test then proves that a predictor saved by an earlier version of the package loads and predicts
bit for bit the same.  Run from the repository root: ``python plugin_tests/tabswift/saved_tabswift/make.py``."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "data" / "qsar_biodeg" / "data.csv.gz"
HP = {"TABSWIFT": {"checkpoint_path": "shipped", "n_estimators": 2, "max_context_rows": 128, "fine_tune": False,
                   "adaptive_threads": False}}


def rows() -> tuple:
    """(training rows, query rows without the label), a fixed sample of the shipped table."""
    df = pd.read_csv(DATA).sample(n=300, random_state=0).reset_index(drop=True)
    label = df.columns[-1]
    return df.iloc[:240], df.iloc[240:].drop(columns=label).reset_index(drop=True), label


def main():
    import torch
    from autogluon.tabular import TabularPredictor

    import autogluon_maya  # noqa: F401  (registers TABSWIFT)

    torch.set_num_threads(1)
    out = HERE / "predictor"
    shutil.rmtree(out, ignore_errors=True)
    train, query, label = rows()
    pred = TabularPredictor(label=label, path=str(out), verbosity=0).fit(
        train, hyperparameters=HP, fit_weighted_ensemble=False, raise_on_model_failure=True, num_cpus=1,
        num_gpus=0)
    pred.save_space()
    shutil.rmtree(out / "logs", ignore_errors=True)
    # the probabilities of the predictor as loaded from disk (from its saved caches), which a later version must
    # reproduce bit for bit
    loaded = TabularPredictor.load(str(out), verbosity=0)
    np.save(HERE / "proba.npy", loaded.predict_proba(query, as_multiclass=False).to_numpy())


if __name__ == "__main__":
    main()
