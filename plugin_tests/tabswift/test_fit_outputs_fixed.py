"""TabSwift fits whose predictions are pinned bit for bit (``fixtures/fit_outputs.npz``): binary, multiclass and
regression tables from ``plugin_tests/data``, zero-shot and fine-tuned, with and without validation rows (the
refit path: warm caches, a replayed step count), with early exit (exit heads retrained after fine-tuning, τ
chosen on validation).  On 120 rows the validated fine-tuning runs its steps but keeps the pretrained weights
(no step validates better); the replayed one keeps what it tuned.  A change to the model's code that is meant to keep its behaviour must keep these arrays
equal; a change meant to alter it rewrites the file with ``python -m plugin_tests.tabswift.test_fit_outputs_fixed``.

One core and no time limit: every step is deterministic (no deadline, no thread probe)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from plugin_tests.resources import torch_globals_kept  # noqa: F401  (a fixture)

FIXTURE = Path(__file__).with_name("fixtures") / "fit_outputs.npz"
TABLES = {"binary": ("qsar_biodeg", "accuracy"), "multiclass": ("satimage", "log_loss"),
          "regression": ("california_housing", "root_mean_squared_error")}
BASE = {"checkpoint_path": "shipped", "n_estimators": 2, "max_context_rows": 128, "random_seed": 3}
TUNE = {"fine_tune_steps": 2, "fine_tune_eval_every": 1, "fine_tune_rows": 48, "fine_tune_episodes_per_step": 1,
        "fine_tune_exit_steps": 2, "fine_tune_eval_members": 1}
#: (name, problem type, validation rows given, hyperparameters)
CASES = (
    ("binary_zero_shot", "binary", True, {"fine_tune": False}),
    ("binary_fine_tuned_tau", "binary", True, {**TUNE, "fine_tune": True, "tau": 0.9}),
    ("multiclass_zero_shot_refit", "multiclass", False, {"fine_tune": False}),
    ("multiclass_auto", "multiclass", True, {**TUNE, "fine_tune": "auto", "fine_tune_min_steps": 1}),
    ("regression_fine_tuned_tau_auto", "regression", True, {**TUNE, "fine_tune": True, "tau": "auto"}),
    # a refit: the recorded step count replayed (the fine-tuned weights are kept), then the exit heads retrained
    ("regression_replay_tau", "regression", False, {**TUNE, "fine_tune": True, "refit_fine_tune_share": 1.0, "tau": 0.9}),
)


def _table(problem: str):
    from plugin_tests.conftest import shipped_table

    name, metric = TABLES[problem]
    df = pd.read_csv(shipped_table(name)).sample(n=200, random_state=0).reset_index(drop=True)
    label = df.columns[-1]
    X, y = df.drop(columns=label), df[label]
    if problem != "regression":
        y = pd.Series(pd.factorize(y, sort=True)[0], name=label)
    return X, y, metric


def _outputs(tmp: Path) -> dict:
    """Every case fitted on one core: its predict_proba and predict of 40 held-out rows."""
    import torch

    from autogluon_maya import TabSwiftModel
    from plugin_tests.resources import fit_on_cores

    out = {}
    for name, problem, validation, hp in CASES:
        X, y, metric = _table(problem)
        model = TabSwiftModel(path=str(tmp / name), name=name, problem_type=problem, eval_metric=metric,
                              hyperparameters={**BASE, **hp})
        val = dict(X_val=X.iloc[120:160], y_val=y.iloc[120:160]) if validation else {}
        fit_on_cores(model, 1, X=X.iloc[:120], y=y.iloc[:120], **val)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            out[f"{name}/proba"] = model.predict_proba(X.iloc[160:])
            out[f"{name}/pred"] = np.asarray(model.predict(X.iloc[160:]))
        finally:
            torch.set_num_threads(threads)
    return out


@pytest.mark.usefixtures("torch_globals_kept")
def test_fits_reproduce_the_pinned_predictions_bit_for_bit(tmp_path):
    expected = np.load(FIXTURE)
    got = _outputs(tmp_path)
    assert sorted(got) == sorted(expected.files)
    for key, value in got.items():
        assert value.dtype == expected[key].dtype and np.array_equal(value, expected[key]), (
            key, np.max(np.abs(value.astype(np.float64) - expected[key].astype(np.float64))))


if __name__ == "__main__":  # rewrite the fixture (only for a change meant to alter predictions)
    import tempfile

    os.environ.setdefault("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT", "shipped")
    with tempfile.TemporaryDirectory() as tmp:
        outputs = _outputs(Path(tmp))
    FIXTURE.parent.mkdir(exist_ok=True)
    np.savez(FIXTURE, **outputs)
    print(f"{FIXTURE}: {', '.join(sorted(outputs))}")
