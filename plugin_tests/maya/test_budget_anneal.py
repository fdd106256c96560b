"""The learning rate's fall to the end of a time budget (``budget_anneal``, ``BudgetAnneal``)."""

from __future__ import annotations

import pytest
import torch

from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya.network import MayaNetwork
from autogluon_maya.maya.trainer import BudgetAnneal, FittedMaya, make_loss, train_maya


def test_the_factor_is_one_before_the_window_then_falls_linearly_to_the_floor():
    anneal = BudgetAnneal(0.25, 100.0)  # the last 25 s of a 100 s run
    assert anneal.window == pytest.approx(25.0)
    assert anneal.factor(100.0) == 1.0 and anneal.factor(25.0) == 1.0
    assert anneal.factor(12.5) == pytest.approx(0.5)
    assert anneal.factor(2.5) == pytest.approx(0.1)
    assert anneal.factor(0.0) == BudgetAnneal.FLOOR and anneal.factor(-3.0) == BudgetAnneal.FLOOR
    fresh = BudgetAnneal(0.25, 100.0)
    assert fresh.factor(5.0) == pytest.approx(0.2)
    assert fresh.factor(7.5) == pytest.approx(0.2)  # a re-estimated reserve must not raise the rate again
    assert fresh.factor(30.0) == pytest.approx(0.2)


@pytest.mark.parametrize("share, seconds", [(None, 100.0), (0.0, 100.0), (0.3, float("inf"))])
def test_no_share_or_no_time_limit_leaves_the_rate_alone(share, seconds):
    anneal = BudgetAnneal(share, seconds)
    assert anneal.window is None
    assert anneal.factor(0.0) == 1.0


def _train_recording(monkeypatch, budget, validate=True, max_epochs=10_000, **params):
    """A tiny MAYA (2 classes, 256 rows, batch 32: 8 steps per epoch) trained on ``budget``; returns the
    summary and, per optimizer step, (its rate, the budget's remaining seconds when it ran)."""
    rates = []
    adamw = torch.optim.AdamW

    class RecordingAdamW(adamw):
        def step(self, *args, **kwargs):
            rates.append((self.param_groups[0]["lr"], budget.remaining()))
            if isinstance(budget, StepBudget):
                budget.steps += 1
            return super().step(*args, **kwargs)

    monkeypatch.setattr(torch.optim, "AdamW", RecordingAdamW)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(256, 4, generator=torch.Generator().manual_seed(0))
    y = (x[:, 0] > 0).long()
    net = MayaNetwork(n_num=4, cat_cardinalities=[], out_dim=2, label_kind="class", num_classes=2, hidden_size=16,
                      num_heads=2, num_branch=1, num_layers=1)
    params = {"learning_rate": 1e-2, "weight_decay": 0.0, "patience": None, "batch_size": 32,
              "use_branch_weights": False, "num_branch": 1, "branch_momentum": 0.9, "ema_epochs": None,
              "adaptive_threads": False, "validation_every": 1, "lr_scheduler": "plateau", **params}
    summary = train_maya(FittedMaya(net), x_num=x, x_cat=torch.zeros(256, 0, dtype=torch.long), y_label=y,
                         y_target=y, sample_weight=None, loss_fn=make_loss("class"), params=params,
                         device=torch.device("cpu"), budget=budget, seed=0,
                         val_score_fn=(lambda f: 0.5) if validate else None, max_epochs=max_epochs)
    return summary, rates


def _fit_recording_rates(monkeypatch, share, time_limit, validate=False, recipe="default"):
    """Trained until a real time limit ends it; returns the summary and the rate of every optimizer step."""
    summary, rates = _train_recording(monkeypatch, TimeBudget(time_limit, safety=1.0), validate=validate,
                                       lr_plateau_patience=1_000, budget_anneal=share, recipe=recipe)
    return summary, [rate for rate, _ in rates]


def test_a_run_cut_by_its_time_limit_ends_at_a_low_rate(monkeypatch):
    summary, rates = _fit_recording_rates(monkeypatch, share=0.5, time_limit=6.0, validate=True)
    assert summary["stop_reason"].startswith("time")
    assert len(rates) > 50
    assert rates[0] == pytest.approx(1e-2)  # untouched before the window
    # the last steps ran deep in the 3 s window: training stops an epoch + a validation pass before the end
    assert rates[-1] < 0.5e-2
    assert all(b <= a + 1e-12 for a, b in zip(rates, rates[1:]))  # the rate only falls
    assert summary["final_lr"] == pytest.approx(rates[-1])


@pytest.mark.parametrize("share, recipe", [(None, "default"), (0.5, "paper")])
def test_without_a_share_or_with_the_paper_recipe_the_rate_stays_constant_to_the_end(monkeypatch, share, recipe):
    summary, rates = _fit_recording_rates(monkeypatch, share=share, time_limit=2.0, validate=True, recipe=recipe)
    assert summary["stop_reason"].startswith("time")
    assert set(rates) == {1e-2}


class StepBudget(TimeBudget):
    """A budget whose remaining seconds fall by ``per_step`` with every optimizer step (deterministic)."""

    def __init__(self, seconds: float, per_step: float):
        super().__init__(seconds, safety=1.0)
        self.seconds, self.per_step, self.steps = seconds, per_step, 0

    def remaining(self) -> float:
        return self.seconds - self.per_step * self.steps


def test_the_plateau_cut_applies_to_its_own_rate_not_the_annealed_one(monkeypatch):
    """Validation never improves, so the plateau scheduler cuts its rate 0.5x after every pass from the
    second.  Each step's rate must be (the plateau's rate) x (the anneal factor of that step): were the
    plateau cutting the annealed rate, the factors of earlier epochs would compound into it."""
    # share 1.0: the whole run (100 s by this budget's clock) is the window; 4 epochs of 8 steps use 64 s
    summary, rates = _train_recording(monkeypatch, StepBudget(100.0, per_step=2.0), max_epochs=4,
                                      lr_plateau_patience=0, lr_plateau_factor=0.5, budget_anneal=1.0)
    assert summary["epochs"] == 4 and len(rates) == 32
    for k, (rate, remaining) in enumerate(rates):
        plateau = 1e-2 * 0.5 ** max(0, k // 8 - 1)  # the first pass sets the best, each later one is a cut
        # the trainer subtracts its reserve (a measured encoding time, ms here; up to 0.5 s allowed under load)
        assert plateau * (remaining - 0.5) / 100.0 <= rate <= plateau * remaining / 100.0 + 1e-12, \
            (k, rate, plateau, remaining)
    assert rates[-1][0] < 0.1 * 1e-2  # both at work: 0.25 x 0.38


@pytest.mark.parametrize("share", [1.5, -0.2, "0.3", True])
def test_a_share_outside_zero_to_one_is_refused_naming_the_setting(monkeypatch, share):
    with pytest.raises(ValueError, match="budget_anneal"):
        _fit_recording_rates(monkeypatch, share=share, time_limit=2.0, validate=True)
