"""MAYA's own time checks: a configuration too slow for its budget is shrunk or skipped before it starts,
and the training loop leaves time for the context encoding that follows it."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
import torch
from autogluon.core.utils.exceptions import TimeLimitExceeded

from autogluon_maya import MayaModel
from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya.defaults import resolve_defaults
from autogluon_maya.maya.schedule import fit_batch_to_budget
from autogluon_maya.maya.trainer import FittedMaya, TrainConfig, TrainData, make_loss, train_maya
from plugin_tests.resources import torch_globals_kept  # noqa: F401  (a fixture)

from .nets import maya_network

# tests set torch's thread count or fit a model (which seeds torch): both are put back after each
pytestmark = pytest.mark.usefixtures("torch_globals_kept")

HEAVY = dict(hidden_size=256, num_heads=8, num_branch=8, num_layers=16, intermediate_factor=2.0)


def _data(n=2048, f=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, f, generator=g)
    return x, torch.zeros(n, 0, dtype=torch.long), (x[:, 0] > 0).long()


def test_a_step_too_slow_for_the_budget_is_never_started():
    torch.set_num_threads(1)
    x_num, x_cat, y = _data()
    net = maya_network(n_num=8, cat_cardinalities=[], out_dim=2, label_kind="class", num_classes=2, **HEAVY)
    params = {**resolve_defaults("binary"), "patience": 5, "batch_size": 2048, "num_branch": 8}
    t0 = time.time()
    summary = train_maya(FittedMaya(net), TrainData(x_num, x_cat, y, y, None),
                         TrainConfig(params=params, loss_fn=make_loss("class"),
                                     device=torch.device("cpu"), seed=0, max_epochs=5),
                         TimeBudget(4.0))
    elapsed = time.time() - t0
    assert summary["steps"] == 0 and summary["stop_reason"].startswith("infeasible"), summary
    assert elapsed < 4.0 * 1.05 + 2, elapsed  # one 2,048-row step of this network alone takes far longer


def test_the_batch_is_halved_when_smaller_steps_fit():
    assert fit_batch_to_budget(512, step_seconds=1.0, remaining=float("inf"), min_steps=8) == (512, "")
    assert fit_batch_to_budget(512, step_seconds=1.0, remaining=8.0, min_steps=8) == (512, "")
    b, why = fit_batch_to_budget(512, step_seconds=1.0, remaining=3.0, min_steps=8)  # 8 x 0.25 s fit
    assert b == 128 and "batch_size 512 -> 128" in why, (b, why)
    b, why = fit_batch_to_budget(512, step_seconds=1.0, remaining=0.5, min_steps=8)  # 64 rows: 8 x 0.125 s
    assert b == 0 and why.startswith("infeasible"), (b, why)


def test_a_default_configuration_is_never_shrunk_in_a_fresh_process():
    """The first forward pass of a fresh process pays one-off set-up costs; timed alone, it once put a
    default step at 41 s and skipped MAYA on a 1,000-row table with 111 s left.  The estimate warms up first."""
    import subprocess
    import sys

    code = (
        "import torch; torch.set_num_threads(1)\n"
        "from autogluon_maya.maya.defaults import resolve_defaults\n"
        "from autogluon_maya.maya.network import NETWORK_KEYS, MayaNetwork\n"
        "from autogluon_maya.maya.schedule import estimate_step_seconds, fit_batch_to_budget\n"
        "table = {**resolve_defaults('binary'), 'num_embeddings': None}\n"
        "g = torch.Generator().manual_seed(0); x = torch.randn(2000, 41, generator=g)\n"
        "net = MayaNetwork(41, [], 2, 'class', 2, **{k: table[k] for k in NETWORK_KEYS})\n"
        "est = estimate_step_seconds(net, x, torch.zeros(2000, 0, dtype=torch.long), (x[:, 0] > 0).long(), 256, 30.0)\n"
        "print(est, fit_batch_to_budget(256, est, 30.0, 8)[0])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    est, batch = float(out[0]), int(out[1])
    assert batch == 256, est
    assert est < 3.0, est  # a 256-row default step takes ~0.1 s on 2 cores


def test_model_fit_of_an_infeasible_config_raises_time_limit_with_the_reason(tmp_path):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(600, 4)), columns=list("abcd"))
    y = pd.Series((X["a"] > 0).astype(int))
    model = MayaModel(path=str(tmp_path), name="heavy", problem_type="binary", eval_metric="accuracy",
                      hyperparameters={**HEAVY, "batch_size": 4096})
    t0 = time.time()
    with pytest.raises(TimeLimitExceeded, match="infeasible"):
        model.fit(X=X, y=y, time_limit=5, num_cpus=1, num_gpus=0)
    assert time.time() - t0 < 5 * 1.05 + 2


def _cadence_fit(validation_every, patience=4, max_epochs=12):
    """A small fit whose validation score never improves: early stopping decides when it ends."""
    x_num, x_cat, y = _data(n=256)
    net = maya_network(n_num=8, cat_cardinalities=[], out_dim=2, label_kind="class", num_classes=2,
                      hidden_size=16, num_heads=2, num_branch=1, num_layers=1)
    params = {**resolve_defaults("binary", "paper"), "patience": patience, "batch_size": 32,
              "use_branch_weights": False, "num_branch": 1, "validation_every": validation_every}
    return train_maya(FittedMaya(net), TrainData(x_num, x_cat, y, y, None),
                      TrainConfig(params=params, loss_fn=make_loss("class"),
                                  device=torch.device("cpu"), seed=0, max_epochs=max_epochs),
                      TimeBudget(None), val_score_fn=lambda f: 0.5)


def test_validation_every_k_epochs_keeps_patience_in_epochs():
    every_epoch = _cadence_fit(1)
    assert [h[0] for h in every_epoch["history"]] == [1, 2, 3, 4, 5], every_epoch["history"]
    every_second = _cadence_fit(2)
    # passes at epochs 1, 3, 5: four epochs without improvement after the best (epoch 1) -> stop at 5
    assert [h[0] for h in every_second["history"]] == [1, 3, 5], every_second["history"]
    assert every_second["epochs"] == 5 and every_second["stop_reason"] == "early stopping", every_second
    # the last epoch is always validated, whatever the cadence
    assert _cadence_fit(3, patience=None, max_epochs=5)["history"][-1][0] == 5


def test_auto_cadence_keeps_validation_a_small_share_of_the_time():
    from autogluon_maya.maya.schedule import MAX_VALIDATION_EVERY, VALIDATION_SHARE, validation_cadence

    assert validation_cadence("auto", 0.1, 10.0) == 1  # cheap validation: every epoch
    assert validation_cadence(2, 0.1, 10.0) == 2  # an explicit cadence is used as given
    for val_s, train_s in ((1.8, 3.7), (1.0, 4.0), (0.9, 3.0)):
        k = validation_cadence("auto", val_s, train_s)
        assert val_s / k <= VALIDATION_SHARE * train_s * (1 + 1e-9) or k == MAX_VALIDATION_EVERY, (val_s, train_s, k)
        assert k == 1 or val_s / (k - 1) > VALIDATION_SHARE * train_s, (val_s, train_s, k)  # smallest such k
    assert validation_cadence("auto", 100.0, 1.0) == MAX_VALIDATION_EVERY


@pytest.mark.parametrize("adaptive, given, want", [(True, 2, 2), (False, 2, 1)])
def test_the_trainer_picks_its_threads_through_adaptive_threads(monkeypatch, adaptive, given, want):
    """``adaptive_threads`` reaches the trainer: with it the thread choice of every step is AdaptiveThreads'
    between 1 and the threads given; without it one fixed thread (bit-for-bit repeatable)."""
    from autogluon_maya.maya import trainer

    made = []

    class Recorder:
        def __init__(self, max_threads):
            self.max_threads, self.calls, self.history = max_threads, [], []
            made.append(self)

        def before_step(self, allow_probe=True):
            self.calls.append("before")

        def after_step(self):
            self.calls.append("after")

    monkeypatch.setattr(trainer, "AdaptiveThreads", Recorder)
    x_num, x_cat, y = _data(n=48)
    net = maya_network(n_num=8, cat_cardinalities=[], out_dim=2, label_kind="class", num_classes=2,
                      hidden_size=8, num_heads=2, num_layers=1)
    params = {**resolve_defaults("binary"), "batch_size": 16, "adaptive_threads": adaptive}
    summary = train_maya(FittedMaya(net), TrainData(x_num, x_cat, y, y, None),
                         TrainConfig(params=params, loss_fn=make_loss("class"),
                                     device=torch.device("cpu"), seed=0, max_epochs=2, num_threads=given),
                         TimeBudget(None))
    assert [r.max_threads for r in made] == [want]
    assert summary["steps"] == 6 and made[0].calls == ["before", "after"] * 6
