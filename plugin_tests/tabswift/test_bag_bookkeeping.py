"""A TabSwift bag's folds write the same ``params_trained`` keys whatever each fold did, so AutoGluon can combine
them for the refit (its ``_get_compressed_params`` reads every fold's value of the first fold's keys)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from autogluon.tabular import TabularPredictor

from autogluon_maya.tabswift import finetune
from plugin_tests.resources import torch_globals_kept  # noqa: F401  (a fixture)

pytestmark = pytest.mark.usefixtures("torch_globals_kept")

SMALL = {"checkpoint_path": "shipped", "n_estimators": 2, "max_context_rows": 256, "fine_tune": True,
         "fine_tune_steps": 6, "fine_tune_eval_every": 3, "fine_tune_rows": 128, "fine_tune_episodes_per_step": 2,
         "fine_tune_lr": 3e-4, "fine_tune_exit_steps": 3, "tau": 0.9,
         "ag_args_ensemble": {"refit_folds": False}}


def _regression_frame(n: int, seed: int) -> pd.DataFrame:
    """The shipped prior handles this badly, so fine-tuning keeps a later step (best_step > 0) when it runs."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n)})
    return X.assign(y=50 + 10 * (np.sin(2 * X["a"]) + X["b"] * X["c"]) + rng.normal(size=n))


def test_a_bag_with_an_explicit_tau_and_one_zero_shot_fold_refits(tmp_path, monkeypatch):
    """Two folds with ``tau=0.9`` and ``fine_tune=True``: the first fine-tunes (its exit heads are retrained and
    its τ checked), the second is given no steps and keeps the pretrained weights (heads as shipped, τ as
    asked).  Both folds record the same keys; the bag's refit runs and repeats the folds' decisions."""
    real, calls = finetune.fine_tune, []

    def one_fold_zero_shot(ens, score_fn, *, steps, **kwargs):
        calls.append(steps)
        return real(ens, score_fn, steps=0 if len(calls) == 2 else steps, **kwargs)

    monkeypatch.setattr(finetune, "fine_tune", one_fold_zero_shot)
    pred = TabularPredictor(label="y", problem_type="regression", path=str(tmp_path / "ag"), verbosity=0).fit(
        _regression_frame(300, seed=7), hyperparameters={"TABSWIFT": SMALL}, num_bag_folds=2, num_cpus=1,
        num_gpus=0, fit_weighted_ensemble=False, raise_on_model_failure=True)
    bag = pred._trainer.load_model("TabSwift_BAG_L1")
    folds = [bag.load_child(c) for c in bag.models]
    tuned = [f.get_info()["tabswift_fine_tune"]["fine_tuned"] for f in folds]
    assert tuned == [True, False], tuned  # the situation under test: one fold of each kind
    keys = [set(f.params_trained) for f in folds]
    assert keys[0] == keys[1], keys[0] ^ keys[1]
    assert {"tau", "fine_tune", "fine_tune_steps", "refit_fine_tune_share", "refit_fine_tune_seconds",
            "refit_prior_share"} <= keys[0]
    seconds = [f.params_trained["refit_fine_tune_seconds"] for f in folds]
    assert seconds[0] > 0 and seconds[1] == 0

    full = pred.refit_full(model="TabSwift_BAG_L1")["TabSwift_BAG_L1"]
    child = pred._trainer.load_model(full)
    child = child.load_child(child.models[0])
    assert child.get_info()["tabswift_fine_tune"]["rule"] == "replay"
    assert np.isfinite(pred.predict(_regression_frame(20, seed=8), model=full)).all()


@pytest.mark.parametrize("recorded_seconds, steps_run", [(0.0, 0), (None, 3)])
def test_a_refit_replays_fine_tuning_within_the_time_the_fit_took(tmp_path, recorded_seconds, steps_run):
    """A refit (no validation rows) replays the recorded step count, but only within the seconds the fit it
    replaces spent fine-tuning: recorded 0 s, no step starts; nothing recorded (a user's own settings), every
    step runs."""
    from autogluon_maya import TabSwiftModel
    from autogluon_maya.tabswift.fine_tune_policy import replay_seconds
    from autogluon_maya.tabswift.refit_records import TabSwiftRefitRecord

    data = _regression_frame(200, seed=3)
    record = {"fine_tune": True, "fine_tune_steps": 3, "refit_fine_tune_share": 1.0,
              "refit_fine_tune_seconds": recorded_seconds}
    hp = {k: v for k, v in SMALL.items() if k not in ("tau", "ag_args_ensemble", "fine_tune")}
    model = TabSwiftModel(path=str(tmp_path / "m"), name="ts", problem_type="regression",
                          eval_metric="root_mean_squared_error", hyperparameters={**hp, **record})
    model.fit(X=data.drop(columns="y"), y=data["y"], num_cpus=1, num_gpus=0)
    d = model.get_info()["tabswift_fine_tune"]
    assert d["rule"] == "replay" and d["steps_run"] == steps_run, d
    assert d["stop_reason"] == ("time" if recorded_seconds == 0.0 else "steps")
    assert model.params_trained["refit_fine_tune_seconds"] == (0.0 if steps_run == 0 else pytest.approx(
        model._fit_summary["fine_tune_seconds"]))
    # one model's record: a margin over the seconds it took (a refit's episodes are larger), but a bounded one
    one = replay_seconds(TabSwiftRefitRecord(fine_tune_seconds=3.0, fine_tune_share=1.0))
    assert 3.0 < one <= 4 * 3.0
    # a bag's record: the seconds averaged over its folds, zero-shot folds as 0, read per fine-tuned fold
    assert replay_seconds(TabSwiftRefitRecord(fine_tune_seconds=3.0, fine_tune_share=0.5)) == pytest.approx(2 * one)
    assert replay_seconds(TabSwiftRefitRecord()) is None and replay_seconds(None) is None
