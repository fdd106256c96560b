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
from autogluon_maya.maya.network import MayaNetwork
from autogluon_maya.maya.trainer import (FittedMaya, estimate_step_seconds, fit_batch_to_budget, make_loss,
                                         train_maya)

HEAVY = dict(hidden_size=256, num_heads=8, num_branch=8, num_layers=16, intermediate_factor=2.0)


def _data(n=2048, f=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, f, generator=g)
    return x, torch.zeros(n, 0, dtype=torch.long), (x[:, 0] > 0).long()


def test_a_step_too_slow_for_the_budget_is_never_started():
    torch.set_num_threads(1)
    x_num, x_cat, y = _data()
    net = MayaNetwork(n_num=8, cat_cardinalities=[], out_dim=2, label_kind="class", num_classes=2, **HEAVY)
    params = {"learning_rate": 1e-3, "weight_decay": 0.0, "patience": 5, "batch_size": 2048,
              "use_branch_weights": True, "num_branch": 8, "branch_momentum": 0.9}
    t0 = time.time()
    summary = train_maya(FittedMaya(net), x_num=x_num, x_cat=x_cat, y_label=y, y_target=y, sample_weight=None,
                         loss_fn=make_loss("class"), params=params, device=torch.device("cpu"),
                         budget=TimeBudget(4.0), seed=0, max_epochs=5)
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
        "from autogluon_maya.maya.network import MayaNetwork\n"
        "from autogluon_maya.maya.trainer import estimate_step_seconds, fit_batch_to_budget\n"
        "g = torch.Generator().manual_seed(0); x = torch.randn(2000, 41, generator=g)\n"
        "net = MayaNetwork(n_num=41, cat_cardinalities=[], out_dim=2, label_kind='class', num_classes=2)\n"
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


def test_tables_wider_than_max_features_are_declined_up_front(tmp_path):
    """458 tokens per row: MAYA could not learn such a table in minutes on a CPU, so it declines it before
    training (AutoGluon logs the reason and fits the other models); ``ag.max_features`` in ag_args_fit raises the cap."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(80, 310)), columns=[f"c{i}" for i in range(310)])
    y = pd.Series((X["c0"] > 0).astype(int))
    model = MayaModel(path=str(tmp_path), name="wide", problem_type="binary", eval_metric="accuracy",
                      hyperparameters={"max_epochs": 1})
    t0 = time.time()
    with pytest.raises(Exception, match="max_features=300") as info:
        model.fit(X=X, y=y, num_cpus=1, num_gpus=0)
    assert time.time() - t0 < 5  # declined before any training
    assert "ConstraintViolation" in type(info.value).__name__
