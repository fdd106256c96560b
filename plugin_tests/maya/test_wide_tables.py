"""Wide tables: no fixed cap on features.  MAYA trains a 520-column table, and declines a table only where its
memory estimate or its step-time estimate says the fit cannot succeed, with a message naming the reason."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from autogluon.core.utils.exceptions import NotEnoughMemoryError, TimeLimitExceeded

from autogluon_maya import MayaModel
from autogluon_maya.maya import schedule

from .test_prior_fallback import autogluon_log, autogluon_log_level  # noqa: F401  (a fixture)

TINY = {"max_epochs": 1, "hidden_size": 16, "num_heads": 2, "ensemble_members": 1, "adaptive_threads": False}


def _wide(n: int, f: int = 520, seed: int = 0):
    """``f`` columns driven by 4 factors; the label is the first factor's sign."""
    rng = np.random.default_rng(seed)
    factors = rng.normal(size=(n, 4))
    X = pd.DataFrame(factors @ rng.normal(size=(4, f)) + 0.5 * rng.normal(size=(n, f)),
                     columns=[f"c{i}" for i in range(f)])
    return X, pd.Series((factors[:, 0] > 0).astype(int))


def test_a_520_column_table_trains_on_every_column(tmp_path, one_torch_thread_seeded):
    X, y = _wide(120)
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type="binary", hyperparameters=TINY)
    model.fit(X=X, y=y, num_cpus=1, num_gpus=0)
    assert len(model.features) == 520
    assert [m.net.tokenizer.n_num for m in model.model.members] == [520]
    assert np.isfinite(model.predict_proba(X.iloc[:5])).all()


def test_a_table_beyond_the_memory_estimate_is_declined_naming_the_reason(tmp_path, caplog, autogluon_log_level,
                                                                          one_torch_thread_seeded):
    """Through TabularPredictor with a memory budget of 1e-6 of the available memory: AutoGluon skips MAYA, its
    failure record says why in MAYA's words, and the log gives AutoGluon's estimate against the memory."""
    from autogluon.tabular import TabularPredictor

    X, y = _wide(120)
    with autogluon_log(caplog):
        pred = TabularPredictor(label="y", path=str(tmp_path / "ag"), verbosity=2).fit(
            X.assign(y=y), hyperparameters={"MAYA": {**TINY, "ag.max_memory_usage_ratio": 1e-6}},
            fit_weighted_ensemble=False, raise_on_no_models_fitted=False, num_cpus=1, num_gpus=0)
    failures = pred.model_failures().set_index("model")
    assert failures.loc["Maya", "exc_type"] == "NotEnoughMemoryError"
    reason = failures.loc["Maya", "exc_str"]
    assert "MAYA declined" in reason and "521 tokens per row" in reason and "GiB" in reason, reason
    assert "Not enough memory to safely train model" in caplog.text


def test_the_memory_refusal_of_a_direct_fit_carries_the_reason(tmp_path, one_torch_thread_seeded):
    X, y = _wide(60)
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type="binary",
                      hyperparameters={**TINY, "ag.max_memory_usage_ratio": 1e-6})
    with pytest.raises(NotEnoughMemoryError, match=r"MAYA declined: a fit on 521 tokens per row .* GiB"):
        model.fit(X=X, y=y, num_cpus=1, num_gpus=0)


def test_a_table_whose_steps_cannot_fit_the_time_is_declined_naming_the_reason(tmp_path, monkeypatch, caplog,
                                                                                one_torch_thread_seeded):
    """A step estimated at 10 s (injected) on a clock that stands still: 8 steps do not fit in a 30 s limit at any
    batch, so the fit declines before training, and says so in the log and the exception."""
    X, y = _wide(120)
    monkeypatch.setattr(schedule, "estimate_step_seconds", lambda *a, **k: 10.0)
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type="binary", hyperparameters=TINY)
    model._budget_clock = lambda: 0.0
    with autogluon_log(caplog), pytest.raises(TimeLimitExceeded, match="infeasible.*521 tokens per row"):
        model.fit(X=X, y=y, X_val=X.iloc[:20], y_val=y.iloc[:20], time_limit=30, num_cpus=1, num_gpus=0)
    assert "MAYA declined to train: infeasible" in caplog.text
