"""One rule standardises regression targets wherever they reach the network (``engine.target_scale``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from autogluon_maya.tabswift import finetune
from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT
from autogluon_maya.tabswift.engine import TabSwiftEngine, target_scale
from autogluon_maya.tabswift.network import REGRESSION
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint


def test_target_scale_is_the_population_statistics_and_shifts_a_constant():
    y = np.array([1.0, 2.0, 4.0, 9.0])
    assert target_scale(y) == pytest.approx((4.0, float(np.std(y))))
    assert target_scale(torch.tensor(y)) == pytest.approx(target_scale(y))  # not torch's unbiased default
    assert target_scale(np.full(5, 1e6)) == (1e6, 1.0)


def test_the_engine_and_the_fine_tuning_episodes_standardise_alike(monkeypatch):
    """The cached engine's context statistics and a fine-tuning episode's both come from ``target_scale``."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(30, 3)), 100 + 20 * rng.normal(size=30)
    engine = TabSwiftEngine(load_checkpoint(SHIPPED_CHECKPOINT))
    cache = engine.encode_context(torch.tensor(x, dtype=torch.float32), torch.tensor(y), REGRESSION)
    assert (cache.y_mean, cache.y_std) == pytest.approx(target_scale(y))
    seen = []
    real = finetune.target_scale
    monkeypatch.setattr(finetune, "target_scale", lambda ys: seen.append(np.asarray(ys)) or real(ys))

    class _Ens:  # the three attributes an episode reads
        network, task = load_checkpoint(SHIPPED_CHECKPOINT), REGRESSION

    monkeypatch.setattr(finetune, "_episode", lambda ens, rng, rows: (x[:20], y[:20], x[20:], y[20:]))
    finetune.episode_loss(_Ens(), np.random.default_rng(0), 30, torch.device("cpu"))
    assert len(seen) == 1 and np.array_equal(seen[0], y[:20])
