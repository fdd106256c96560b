"""The moving average of MAYA's weights (``ema_epochs``): what it averages, that validation and the shipped
model use it, and that training continues from the live weights."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya.defaults import resolve_defaults
from autogluon_maya.maya.trainer import FittedMaya, TrainConfig, TrainData, WeightAverage, make_loss, train_maya

from .nets import maya_network
from plugin_tests.resources import fit_on_cores, torch_globals_kept  # noqa: F401  (a fixture)

# the tests seed torch and set its thread count: both are put back after each
pytestmark = pytest.mark.usefixtures("torch_globals_kept")


def test_the_average_follows_the_warmed_up_decay():
    torch.manual_seed(0)
    net = nn.Linear(3, 2)
    avg = WeightAverage(net, horizon_epochs=2.0, steps_per_epoch=50)  # decay 0.99
    assert abs(avg.decay - 0.99) < 1e-12
    expected = None
    for t in range(40):
        with torch.no_grad():
            net.weight.add_(torch.randn_like(net.weight))
        avg.update(net)
        w = net.weight.detach().clone()
        if expected is None:
            expected = w  # the first update copies
        else:
            k = t - 1  # updates already averaged before this one, minus the copy
            d = min(0.99, (1.0 + k + 1) / (10.0 + k + 1))
            expected = d * expected + (1 - d) * w
    torch.testing.assert_close(avg.model.module.weight, expected)
    assert not torch.allclose(avg.model.module.weight, net.weight)


def test_float_buffers_are_averaged_and_masks_keep_their_first_copy():
    """The average covers float buffers as well as parameters; a bool mask (a piecewise-linear embedding's) is a
    constant of the fit: lerp cannot take it, and the average keeps the copy of the first update."""
    net = nn.Linear(2, 1)
    net.register_buffer("scale", torch.zeros(3))
    net.register_buffer("mask", torch.tensor([True, False, True]))
    avg = WeightAverage(net, horizon_epochs=1.0, steps_per_epoch=1)  # decay 0: the average is the last update
    avg.update(net)
    with torch.no_grad():
        net.scale.fill_(2.0)
        net.mask.fill_(False)  # not something a fit does: shows the mask is not averaged
    avg.update(net)
    # warm-up decay at t=1: min(0, 2/11) = 0 -> the float buffer follows the live one exactly
    torch.testing.assert_close(avg.model.module.scale, torch.full((3,), 2.0))
    assert avg.model.module.mask.tolist() == [True, False, True]


def test_swapping_in_the_average_puts_the_training_weights_back():
    net = nn.Linear(3, 2)
    avg = WeightAverage(net, 1.0, 10)
    avg.update(net)
    with torch.no_grad():
        net.weight.add_(1.0)
    live = net.weight.detach().clone()
    param = net.weight
    with avg.swapped_into(net):
        torch.testing.assert_close(net.weight, avg.model.module.weight)
        assert not torch.allclose(net.weight, live)
    torch.testing.assert_close(net.weight, live)
    assert net.weight is param  # the optimizer still holds the same tensors


def _fit(ema_epochs, validate: bool, policy=None):
    """3 epochs of a tiny MAYA; ``policy(call)`` gives the validation score of the ``call``-th scoring
    (with an average: calls 0, 1 are epoch 1's live and averaged weights, 2, 3 epoch 2's, ...)."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 4, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    net = maya_network(n_num=4, cat_cardinalities=[], out_dim=2, label_kind="class", num_classes=2, hidden_size=16,
                      num_heads=2, num_branch=2, num_layers=1)
    fitted = FittedMaya(net)
    # the paper's constant rate: the same live trajectory with and without validation
    params = {**resolve_defaults("binary", "paper"), "learning_rate": 3e-3, "weight_decay": 0.0, "patience": None,
              "batch_size": 64, "num_branch": 2, "ema_epochs": ema_epochs, "adaptive_threads": False}
    seen = []

    def score(f):
        seen.append({k: v.detach().clone() for k, v in f.net.state_dict().items()})
        return float(policy(len(seen) - 1))

    summary = train_maya(fitted, TrainData(x, torch.zeros(512, 0, dtype=torch.long), y, y, None),
                         TrainConfig(params=params, loss_fn=make_loss("class"),
                                     device=torch.device("cpu"), seed=0, max_epochs=3),
                         TimeBudget(None), val_score_fn=score if validate else None)
    return fitted, summary, seen


def _same(a: dict, b: dict) -> bool:
    return all(torch.equal(a[k], b[k]) for k in a)


def test_the_average_is_kept_when_it_validates_better():
    fitted, summary, seen = _fit(1.0, True, policy=lambda c: 1.0 if c == 1 else 0.0)  # epoch 1's average
    assert len(seen) == 6 and summary["best_epoch"] == 1
    assert not _same(seen[0], seen[1])  # the average is not the live network
    assert _same(fitted.net.state_dict(), seen[1])
    assert summary["best_is_average"] is True


def test_the_live_weights_are_kept_when_they_validate_better():
    """And the context, last encoded with the average, is reported stale so the caller re-encodes it."""
    fitted, summary, seen = _fit(1.0, True, policy=lambda c: 1.0 if c == 4 else 0.0)  # epoch 3's live weights
    assert summary["best_epoch"] == 3
    assert _same(fitted.net.state_dict(), seen[4]) and not _same(seen[4], seen[5])
    assert summary["context_fresh"] is False
    assert summary["best_is_average"] is False  # so refit_full, without validation, ships live weights too
    _, plain_summary, _ = _fit(1.0, True, policy=lambda c: 1.0 if c == 5 else 0.0)  # epoch 3's average
    assert plain_summary["context_fresh"] is True


def test_training_continues_from_the_live_weights():
    """Swapping the average in for validation must not leak into training: validated after every epoch
    (the last average best) or never validated, a fit ships the same average of the same live trajectory."""
    validated, _, _ = _fit(1.0, True, policy=float)
    unvalidated, summary, _ = _fit(1.0, False)
    for (k, a), b in zip(validated.net.state_dict().items(), unvalidated.net.state_dict().values()):
        torch.testing.assert_close(a, b, msg=k)
    # and without validation the shipped weights are the average of the last steps, not the last step
    plain, _, _ = _fit(None, False)
    diffs = [float((a - b).abs().max()) for a, b in zip(unvalidated.net.state_dict().values(),
                                                        plain.net.state_dict().values()) if a.is_floating_point()]
    assert max(diffs) > 1e-4
    assert summary["steps"] == 3 * 8


@pytest.mark.parametrize("problem_type", ["regression", "binary"])
def test_the_tables_defaults_reach_a_real_fit(problem_type, tmp_path):
    """The problem type's row of the table (defaults.DEFAULT_PARAMS) is what trains, and ``params_trained``,
    which refit_full and a saved model read back, carries it; an explicit value wins."""
    import pandas as pd

    from autogluon_maya import MayaModel

    g = torch.Generator().manual_seed(0)
    X = pd.DataFrame(torch.randn(300, 3, generator=g).numpy(), columns=["a", "b", "c"])
    y = X["a"] * 2 + X["b"] if problem_type == "regression" else (X["a"] > 0).astype(int)
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type=problem_type,
                      hyperparameters={"max_epochs": 2, "hidden_size": 16, "num_heads": 2, "num_layers": 1})
    fit_on_cores(model, 1, X=X.iloc[:240], y=y.iloc[:240], X_val=X.iloc[240:], y_val=y.iloc[240:])
    want = resolve_defaults(problem_type)
    # refit_full replays the average only where it won the validation
    kept = want["ema_epochs"] if model._fit_summary["best_is_average"] is not False else None
    assert model.params_trained["ema_epochs"] == kept
    assert (model._fit_summary["weight_average_decay"] is not None) is (want["ema_epochs"] is not None)
    assert [m.net.blocks[0].n for m in model.model.members] == [want["num_branch"]] * len(model.model)
    # an explicit value wins over the table
    model2 = MayaModel(path=str(tmp_path / "m2"), name="m2", problem_type=problem_type,
                       hyperparameters={"max_epochs": 1, "hidden_size": 16, "num_heads": 2, "num_layers": 1,
                                        "ema_epochs": None if problem_type == "regression" else 3, "num_branch": 3})
    fit_on_cores(model2, 1, X=X.iloc[:240], y=y.iloc[:240])
    assert model2.model.members[0].net.blocks[0].n == 3
    assert (model2._fit_summary["weight_average_decay"] is None) is (problem_type == "regression")
    assert model2.params_trained["ema_epochs"] == (None if problem_type == "regression" else 3)
