"""What MAYA's training follows (``stop_on``) and how it bounds a step (``grad_clip``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from autogluon_maya import MayaModel
from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya.defaults import resolve_defaults
from autogluon_maya.maya.network import MayaNetwork
from autogluon_maya.maya.trainer import FittedMaya, TrainConfig, TrainData, make_loss, train_maya
from plugin_tests.resources import fit_on_cores
from plugin_tests.resources import torch_globals_kept  # noqa: F401  (a fixture)

pytestmark = pytest.mark.usefixtures("torch_globals_kept")


def _table(n: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n)})
    y = pd.Series((X["a"] + X["b"] * X["c"] + 0.5 * rng.normal(size=n) > 0).astype(int), name="y")
    return X, y


@pytest.mark.parametrize("stop_on", ["metric", "loss"])
def test_training_follows_the_metric_or_the_validation_log_loss(stop_on):
    """With ``stop_on="loss"`` every validation pass scores the negated log loss (below 0), and the kept epoch is
    the one with the smallest; with ``"metric"`` the passes score accuracy (in [0, 1]).  Either way the check
    against the prior is made on the stopping metric, accuracy."""
    X, y = _table()
    model = MayaModel(name=f"m_{stop_on}", problem_type="binary", eval_metric="accuracy",
                      hyperparameters={"stop_on": stop_on, "max_epochs": 6, "ensemble_members": 1,
                                       "validation_every": 1, "hidden_size": 16})
    fit_on_cores(model, 1, X=X.iloc[:200], y=y.iloc[:200], X_val=X.iloc[200:], y_val=y.iloc[200:])
    scores = [s for _, _, s in model._fit_summary["history"]]
    assert len(scores) == 6
    if stop_on == "loss":
        assert all(s < 0 for s in scores), scores
    else:
        assert all(0 <= s <= 1 for s in scores), scores
    assert model._fit_summary["best_score"] == max(scores)
    check = model._fit_info["validation"]
    assert check["metric"] == "accuracy" and 0 <= check["maya"] <= 1


@pytest.mark.parametrize("clip", [None, 1e-3])
def test_grad_clip_bounds_every_step(monkeypatch, clip):
    """``grad_clip`` clips the gradient norm of every step to the value given before AdamW steps; None leaves the
    gradients as computed."""
    calls = []
    real = torch.nn.utils.clip_grad_norm_

    def spy(parameters, max_norm, *args, **kwargs):
        parameters = list(parameters)
        norm = real(parameters, max_norm, *args, **kwargs)
        after = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in parameters if p.grad is not None]))
        calls.append((float(norm), float(after), max_norm))
        return norm

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", spy)
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = (x[:, 0] > 0).long()
    net = MayaNetwork(n_num=4, cat_cardinalities=[], out_dim=2, label_kind="class", num_classes=2,
                      hidden_size=8, num_heads=2, num_layers=1)
    params = {**resolve_defaults("binary"), "batch_size": 16, "grad_clip": clip, "adaptive_threads": False}
    summary = train_maya(FittedMaya(net), TrainData(x, torch.zeros(64, 0, dtype=torch.long), y, y),
                         TrainConfig(params=params, loss_fn=make_loss("class"), device=torch.device("cpu"), seed=0,
                                     max_epochs=2), TimeBudget(None))
    if clip is None:
        assert calls == []
    else:
        assert len(calls) == summary["steps"] == 8
        assert all(before > clip and after == pytest.approx(clip, rel=1e-3) for before, after, _ in calls), calls
