"""MAYA's GPU memory estimate, which AutoGluon checks against a GPU's free memory before a fit and uses to size
parallel folds: computed on the CPU from the table's shape and the settings."""

from __future__ import annotations

import numpy as np
import pandas as pd

from autogluon_maya import MayaModel
from autogluon_maya.maya.memory import CUDA_CONTEXT_BYTES, WEIGHT_COPIES, estimate_terms


def _X(n: int, f: int = 20) -> pd.DataFrame:
    return pd.DataFrame(np.random.default_rng(0).normal(size=(n, f)), columns=[f"c{i}" for i in range(f)])


def _gpu(X, **hp) -> int:
    return MayaModel.estimate_gpu_memory_usage_static(X=X, hyperparameters=hp, problem_type="binary", num_classes=2)


def test_autogluon_sees_the_gpu_estimate_and_it_counts_each_term():
    assert MayaModel.can_estimate_gpu_memory_usage_static()
    X = _X(4000)
    t = estimate_terms(X, {}, "binary")
    assert _gpu(X) == int(CUDA_CONTEXT_BYTES + WEIGHT_COPIES * t["params"] + 1.25 * t["network"] + t["small"]
                          + t["rows_on_device"])


def test_the_gpu_estimate_grows_with_rows_width_and_depth_and_shrinks_with_a_context_cap():
    small, large = _X(2000), _X(50000)
    assert _gpu(large) > _gpu(small) > CUDA_CONTEXT_BYTES
    assert _gpu(small, hidden_size=256, num_heads=8) > _gpu(small)
    assert _gpu(small, num_layers=3) > _gpu(small)
    assert _gpu(large, max_context_rows=1000) < _gpu(large)
    # the weights' term is quadratic in the width: four times the parameters' share at twice the width
    p64 = estimate_terms(small, {"hidden_size": 64}, "binary")["params"]
    p128 = estimate_terms(small, {"hidden_size": 128, "num_heads": 4}, "binary")["params"]
    assert 3.5 < p128 / p64 < 4.0
