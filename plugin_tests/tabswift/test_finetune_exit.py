"""Early exit after fine-tuning: fine-tuning moves the backbone, so the exit heads are
retrained on it with the backbone frozen -- or early exit is turned off with a logged reason."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
import torch

from autogluon_maya import TabSwiftModel
from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT
from autogluon_maya.tabswift.ensemble import TabSwiftEnsemble
from autogluon_maya.tabswift.exit_heads import retrain_exit_heads
from autogluon_maya.tabswift.model import TAU_CANDIDATES
from autogluon_maya.tabswift.network import CLASSIFICATION
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint
from plugin_tests.resources import fit_on_cores

FAST = {"n_estimators": 2, "max_context_rows": 512}
HEADS = ("layer_heads.", "exit_heads.")


def _frame(n, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n),
                      "color": pd.Categorical(rng.choice(["red", "green", "blue"], size=n))})
    signal = np.sin(2 * X["a"]) + X["b"] * X["c"] + (X["color"] == "red")
    return X, pd.Series((signal + 0.2 * rng.normal(size=n) > 0.4).astype(int), name="y")


def test_retrain_exit_heads_changes_only_the_heads(one_torch_thread_seeded):
    net = load_checkpoint(SHIPPED_CHECKPOINT)
    X, y = _frame(200)
    ens = TabSwiftEnsemble(net, CLASSIFICATION, n_estimators=2).fit(X, y.to_numpy(), n_classes=2)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    result = retrain_exit_heads(ens, steps=3, episodes_per_step=2, rows=96, seed=0)
    after = net.state_dict()
    assert result["exit_retrain_steps"] == 3
    assert all(torch.equal(before[k], after[k]) for k in before if not k.startswith(HEADS)), "backbone changed"
    assert any(not torch.equal(before[k], after[k]) for k in before if k.startswith("exit_heads."))
    assert any(not torch.equal(before[k], after[k]) for k in before if k.startswith("layer_heads."))
    assert all(p.requires_grad for p in net.parameters())  # trainability restored for the caller
    assert not net.training


def _regression_frame(n, seed):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n)})
    return X, 50 + 10 * (np.sin(2 * X["a"]) + X["b"] * X["c"]) + rng.normal(size=n)


def _fit(tmp_path, hp, seed=1):
    """A regression task where zero-shot is weak, so fine-tuning moves the backbone (best_step > 0)."""
    X, y = _regression_frame(400, seed)
    model = TabSwiftModel(path=str(tmp_path / "m"), name="ts", problem_type="regression",
                          eval_metric="root_mean_squared_error",
                          hyperparameters={"checkpoint_path": "shipped", "n_estimators": 2, "max_context_rows": 256,
                                           "fine_tune": True, "fine_tune_eval_every": 3, "fine_tune_rows": 128,
                                           "fine_tune_episodes_per_step": 2, "fine_tune_lr": 3e-4, **hp})
    fit_on_cores(model, 1, X=X.iloc[:250], y=y.iloc[:250], X_val=X.iloc[250:], y_val=y.iloc[250:])
    return model, X.iloc[250:], y.iloc[250:]


def _exit_loss(model, X_val, y_val):
    """Relative validation loss of the fitted τ against no exit, and the mean exit layer at that τ."""
    ens = model.model
    with_exit = model.score(X_val, y_val)  # AutoGluon's sign: higher is better (-RMSE)
    depth = ens.last_mean_exit_layer
    tau, ens.tau = ens.tau, None
    no_exit = model.score(X_val, y_val)
    ens.tau = tau
    return (no_exit - with_exit) / abs(no_exit), depth


def _raised_tau(summary, tau, max_loss):
    """The τ a fit must keep once the requested ``tau`` lost more than ``max_loss`` on validation: every larger
    candidate is scored (the fits here have no time limit), and the lowest one whose recorded validation score
    is within ``max_loss`` of no exit wins (None when none is)."""
    base = summary["val_score_no_exit"]
    table = summary["tau_table"]
    assert [t for t, _, _ in table] == sorted((t for t in TAU_CANDIDATES if t > tau), reverse=True)
    within = [t for t, score, _ in table if base - score <= max_loss * abs(base)]
    return min(within, default=None)


def test_fine_tuned_model_with_tau_stays_within_tau_max_loss_of_no_exit(tmp_path):
    """tau=0.5 is a low threshold: with the pretrained exit heads left on the fine-tuned backbone this fit
    lost 54 % RMSE at tau=0.5 (queries left at layers whose heads no longer fit the backbone).  The heads
    are retrained; whether 15 steps recalibrate them enough depends on the checkpoint and the data (2-10 %
    loss in an earlier probe), so the fit checks the requested τ on validation and keeps it only within
    tau_max_loss -- otherwise a larger candidate or no exit.  Either way the model the user gets is within
    tau_max_loss of no exit on the validation rows."""
    tau, max_loss = 0.5, 0.01
    model, X_val, y_val = _fit(tmp_path, {"fine_tune_steps": 6, "fine_tune_exit_steps": 15, "tau": tau,
                                          "tau_max_loss": max_loss})
    s = model._fit_summary
    assert s["best_step"] > 0, "fine-tuning must have changed the backbone for this test to mean anything"
    assert s["exit_retrain_steps"] == 15 and "early_exit_off" not in s
    pretrained = load_checkpoint(SHIPPED_CHECKPOINT).state_dict()
    tuned = model.model.network.state_dict()
    assert any(not torch.equal(pretrained[k], tuned[k].cpu()) for k in pretrained if k.startswith("exit_heads."))

    ens = model.model
    assert s["tau_requested"] == tau
    if s["tau_requested_val_loss"] <= max_loss:
        assert ens.tau == tau and "tau_table" not in s
    else:
        assert ens.tau == _raised_tau(s, tau, max_loss)
    assert model.params_trained["tau"] == ens.tau  # refit_full replays what was checked
    loss, depth = _exit_loss(model, X_val, y_val)
    assert abs(loss - s["tau_requested_val_loss"]) < 1e-6 or ens.tau != tau  # the check measured this model
    assert loss <= max_loss, (loss, depth, ens.tau)
    if ens.tau == tau:  # the requested threshold was kept: queries must actually leave early
        L = ens.network.config.n_layers
        assert depth < L - 0.5, f"queries must actually exit early (mean exit layer {depth:.2f} of {L})"


def test_a_tau_that_loses_on_validation_after_fine_tuning_is_raised(tmp_path):
    """One retraining step leaves the exit heads close to the pretrained ones, which read a backbone they
    were not trained on: tau=0.5 then loses far more than 1 % and the fit must not keep it."""
    tau, max_loss = 0.5, 0.01
    model, X_val, y_val = _fit(tmp_path, {"fine_tune_steps": 6, "fine_tune_exit_steps": 1, "tau": tau,
                                          "tau_max_loss": max_loss})
    s = model._fit_summary
    assert s["best_step"] > 0 and s["exit_retrain_steps"] == 1
    assert s["tau_requested_val_loss"] > max_loss, "the stale heads must lose for this test to mean anything"
    assert model.model.tau == _raised_tau(s, tau, max_loss)
    assert model.params_trained["tau"] == model.model.tau
    loss, _ = _exit_loss(model, X_val, y_val)
    assert loss <= max_loss


def test_no_exit_head_retraining_turns_early_exit_off_with_a_reason(tmp_path):
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    log = logging.getLogger("autogluon.ext.autogluon_maya.tabswift.model")
    log.addHandler(handler)
    level = log.level
    log.setLevel(logging.INFO)
    try:
        model, X_val, _ = _fit(tmp_path, {"fine_tune_steps": 3, "fine_tune_exit_steps": 0, "tau": 0.5})
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    assert model._fit_summary["best_step"] > 0
    assert model.model.tau is None and model.params_trained["tau"] is None
    assert model._fit_summary["early_exit_off"] == "fine_tune_exit_steps=0"
    assert model.get_info()["tabswift_early_exit"] == {"tau": None, "exit_heads": "dropped",
                                                       "early_exit_off": "fine_tune_exit_steps=0"}
    assert any("early exit turned off" in r.getMessage() for r in records)
    model.predict(X_val)
    assert model.model.last_mean_exit_layer == model.model.network.config.n_layers  # nobody exits


def test_heads_not_retrained_after_fine_tuning_can_not_be_used_later(tmp_path):
    """The heads the fine-tuned backbone was not retrained for are gone, in memory and on disk: a tau set
    after the fit is refused with the cause, instead of exits decided by heads of the pretrained backbone
    (which a fit with fine_tune_exit_steps=0 used to leave in the saved network)."""
    model, X_val, _ = _fit(tmp_path, {"fine_tune_steps": 3, "fine_tune_exit_steps": 0, "tau": 0.5})
    assert model._fit_summary["best_step"] > 0
    net = model.model.network
    assert net.n_exit_layers == 0 and not net.config.early_exit
    model.model.tau = 0.5
    with pytest.raises(ValueError, match="early_exit=False"):
        model.predict(X_val)
    model.model.tau = None
    model.save()
    loaded = TabSwiftModel.load(model.path)
    assert not any(k.startswith(HEADS) for k in loaded.model.network.state_dict())
    loaded.model.tau = 0.5
    with pytest.raises(ValueError, match="early_exit=False"):
        loaded.predict(X_val)


def test_fine_tuning_marks_the_exit_heads_stale_until_they_are_retrained(one_torch_thread_seeded):
    """Below the AutoGluon model: once fine-tuning changed the backbone, the engine refuses to exit with
    the heads of the pretrained one; one retraining step makes them this backbone's heads again."""
    from autogluon_maya.tabswift.finetune import fine_tune

    X, y = _frame(120)
    ens = TabSwiftEnsemble(load_checkpoint(SHIPPED_CHECKPOINT), CLASSIFICATION, n_estimators=1).fit(
        X.iloc[:100], y.to_numpy()[:100], n_classes=2)
    ens.tau = 0.9
    ens.predict_proba(X.iloc[100:])  # the pretrained heads belong to the pretrained backbone
    fine_tune(ens, None, steps=1, lr=1e-4, episodes_per_step=1, rows=48, eval_every=1, patience=1, seed=0)
    assert ens.network.exit_heads_stale
    with pytest.raises(ValueError, match="not trained on this network's backbone"):
        ens.predict_proba(X.iloc[100:])
    assert retrain_exit_heads(ens, steps=1, episodes_per_step=1, rows=48, seed=0)["exit_retrain_steps"] == 1
    assert not ens.network.exit_heads_stale
    ens.predict_proba(X.iloc[100:])


def test_fine_tuning_without_tau_drops_the_exit_heads_it_would_leave_stale(tmp_path):
    """tau=None (the default): the heads were trained on the pretrained backbone and nothing retrains
    them, so the fit drops them -- the saved network has none, and asking it for early exit later is
    an error naming the cause rather than exits decided by heads of another backbone."""
    model, X_val, _ = _fit(tmp_path, {"fine_tune_steps": 3})
    assert model._fit_summary["best_step"] > 0 and model._fit_summary["exit_heads"] == "dropped"
    net = model.model.network
    assert net.n_exit_layers == 0 and not net.config.early_exit
    assert not any(k.startswith(HEADS) for k in net.state_dict())
    model.save()
    loaded = TabSwiftModel.load(model.path)
    assert loaded.model.network.n_exit_layers == 0
    # the saved context caches hold float16 block inputs: equal to ~1e-5 relative
    np.testing.assert_allclose(loaded.predict(X_val), model.predict(X_val), rtol=1e-4)
    loaded.model.tau = 0.9
    with pytest.raises(ValueError, match="early_exit=False"):
        loaded.predict(X_val)


def test_zero_shot_fit_keeps_the_pretrained_exit_heads(tmp_path):
    model, _, _ = _fit(tmp_path, {"fine_tune": False})
    assert "exit_heads" not in model._fit_summary
    assert model.model.network.n_exit_layers == model.model.network.config.n_layers - 1


class StepClock:
    """A clock that only moves when a training episode runs: ``per_episode`` seconds each."""

    def __init__(self, per_episode: float):
        self.now, self.per_episode = 0.0, per_episode

    def __call__(self) -> float:
        return self.now


def _clocked(monkeypatch, name: str, clock: StepClock):
    """Each call of ``name`` (an episode's loss, in the module whose loop calls it) advances ``clock``."""
    import autogluon_maya.tabswift.exit_heads as heads
    import autogluon_maya.tabswift.finetune as ft

    module = heads if name == "exit_episode_loss" else ft
    real = getattr(module, name)

    def episode(*args, **kwargs):
        clock.now += clock.per_episode
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, episode)


def test_exit_head_retraining_starts_a_step_only_if_it_ends_by_the_deadline(monkeypatch, one_torch_thread_seeded):
    """Steps of 1 s (injected clock), deadline 2.5 s: steps 1 and 2 end at 1 s and 2 s; step 3 would end
    at 3 s, so it must not start (checking only "is the deadline past?" ran it and ended at 3 s)."""
    net = load_checkpoint(SHIPPED_CHECKPOINT)
    X, y = _frame(120)
    ens = TabSwiftEnsemble(net, CLASSIFICATION, n_estimators=1).fit(X, y.to_numpy(), n_classes=2)
    clock = StepClock(1.0)
    _clocked(monkeypatch, "exit_episode_loss", clock)
    result = retrain_exit_heads(ens, steps=10, episodes_per_step=1, rows=48, seed=0, deadline=2.5, clock=clock)
    assert result["exit_retrain_steps"] == 2 and clock.now <= 2.5
    # the first step's duration is the caller's estimate: one that does not fit starts nothing
    clock.now = 0.0
    result = retrain_exit_heads(ens, steps=10, episodes_per_step=1, rows=48, seed=0, deadline=2.5, clock=clock,
                                first_step_seconds=3.0)
    assert result["exit_retrain_steps"] == 0 and clock.now == 0.0


def test_fine_tuning_budgets_its_first_step_and_ends_by_the_deadline(monkeypatch, one_torch_thread_seeded):
    """Steps of 2 episodes x 1 s; deadline 5 s: steps 1 and 2 fit (ending at 2 s and 4 s), step 3 not.
    With a first-step estimate of 6 s nothing starts: the first step used to start unbudgeted, and on
    a busy machine it alone took more than the first fold's share of a bag."""
    from autogluon_maya.tabswift.finetune import fine_tune

    net = load_checkpoint(SHIPPED_CHECKPOINT)
    X, y = _frame(120)
    ens = TabSwiftEnsemble(net, CLASSIFICATION, n_estimators=1).fit(X, y.to_numpy(), n_classes=2)
    clock = StepClock(1.0)
    _clocked(monkeypatch, "episode_loss", clock)
    kw = dict(steps=50, lr=1e-4, episodes_per_step=2, rows=48, eval_every=100, patience=1, seed=0, deadline=5.0,
              clock=clock)
    result = fine_tune(ens, None, **kw)
    assert result["fine_tune_steps"] == 2 and result["stop_reason"] == "time" and clock.now <= 5.0
    clock.now = 0.0
    result = fine_tune(ens, None, first_step_seconds=6.0, **kw)
    assert result["fine_tune_steps"] == 0 and clock.now == 0.0


def test_adam_and_cosine_match_torch():
    """The written-out Adam is torch.optim.Adam's update; cosine_lr is CosineAnnealingLR(eta_min=0.1 lr)."""
    from autogluon_maya.tabswift.finetune import Adam, cosine_lr

    torch.manual_seed(0)
    ours, ref = torch.nn.Linear(5, 3), torch.nn.Linear(5, 3)
    ref.load_state_dict(ours.state_dict())
    opt_ours = Adam(ours.parameters(), lr=1e-2)
    opt_ref = torch.optim.Adam(ref.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt_ref, T_max=7, eta_min=1e-3)
    for step in range(1, 8):
        x = torch.randn(16, 5)
        for net, opt in ((ours, opt_ours), (ref, opt_ref)):
            opt.zero_grad()
            net(x).pow(2).mean().backward()
        opt_ours.lr = cosine_lr(1e-2, step, 7)
        assert opt_ours.lr == pytest.approx(opt_ref.param_groups[0]["lr"])
        opt_ours.step()
        opt_ref.step()
        sched.step()
        for a, b in zip(ours.parameters(), ref.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert cosine_lr(1e-2, 100, 7) == pytest.approx(1e-3)  # flat after the horizon
