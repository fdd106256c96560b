"""How MAYA bounds a step (``grad_clip``)."""

from __future__ import annotations

import pytest
import torch

from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya.defaults import resolve_defaults
from autogluon_maya.maya.network import MayaNetwork
from autogluon_maya.maya.trainer import FittedMaya, TrainConfig, TrainData, make_loss, train_maya
from plugin_tests.resources import torch_globals_kept  # noqa: F401  (a fixture)

pytestmark = pytest.mark.usefixtures("torch_globals_kept")


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
