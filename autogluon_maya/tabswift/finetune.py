"""Fine-tuning TabSwift on the user's table (beyond the paper, like AutoGluon's Mitra).

Each step draws episodes from the training rows -- a random subset split into support and query rows,
seen through a random ensemble member's view (normalization, feature permutation, class shift) so the
network is not tuned to one ordering -- and minimizes the pretraining loss on the queries (CE, or
MSE + MAE on targets standardized with the support's statistics).  Every ``eval_every`` steps
``score_fn`` scores the validation rows (the model passes the first ``fine_tune_eval_members``
members, for speed); the best weights (the pretrained ones count as step 0) are kept, so fine-tuning
never ends worse than zero-shot on that validation check.

Fine-tuning only trains the backbone and the final heads, and marks the early-exit heads stale
(``TabSwiftNetwork.exit_heads_stale``: the engine refuses to exit with them); ``exit_heads.retrain_exit_heads``
then refits them to the new backbone (backbone frozen), so τ keeps meaning what it meant, and clears
the mark.  Heads still stale at the end of a fit -- no τ, ``fine_tune_exit_steps=0``, no time left --
are dropped (``TabSwiftNetwork.drop_exit_heads``): retraining heads nobody uses costs as much as
fine-tuning, and keeping the pretrained ones would save heads that no longer match the backbone.  The
same function trains fresh heads on a checkpoint that has none (the authors' released weights).

Both loops stop before a step (and a validation pass due after it) that would end past their
deadline; the first step's duration is the caller's estimate (``first_step_seconds``), later ones
the last step's.  ``clock`` is injectable so the stopping rule is tested without wall time.

``fine_tune_auto`` (``fine_tune="auto"``) decides whether to fine-tune at all (``auto_rule``: validation
rows to judge by, and time for a minimum useful number of steps) and keeps the fine-tuned weights only
when the whole ensemble validates better with them than with the pretrained ones.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from typing import Callable, Dict, NamedTuple, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from .engine import target_scale
from .ensemble import TabSwiftEnsemble, shift_labels
from .network import CLASSIFICATION

logger = logging.getLogger(f"autogluon.ext.{__name__}")


def _episode(ens: TabSwiftEnsemble, rng: np.random.Generator, rows: int):
    n = len(ens.y_context_)
    size = min(rows, n)
    idx = rng.choice(n, size=size, replace=False)
    n_support = int(np.clip(round(size * rng.uniform(0.5, 0.9)), 1, size - 1))
    member = ens.members_[rng.integers(len(ens.members_))]
    x = ens.x_context_[member.norm][idx][:, list(member.permutation)]
    y = ens.y_context_[idx]
    if ens.task == CLASSIFICATION:
        y = shift_labels(y, member.shift, ens.n_classes_)
    return x[:n_support], y[:n_support], x[n_support:], y[n_support:]


class Adam:
    """Adam without weight decay (Kingma & Ba 2015, Algorithm 1, bias-corrected moments; the update
    torch.optim.Adam computes) with the learning rate set by the caller before each step.

    Not ``torch.optim``: every torch optimizer imports ``torch._dynamo`` on first use, 2.1 s of a fresh
    process on 2 idle cores and up to 6.8 s beside other jobs -- paid inside the first fold of a bag,
    where AutoGluon gives up on the whole bag once that fold took half of the bag's time."""

    def __init__(self, params, lr: float, betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.params = list(params)
        self.lr, (self.beta1, self.beta2), self.eps, self.t = float(lr), betas, eps, 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        step_size = self.lr / (1 - self.beta1 ** self.t)
        root_c2 = math.sqrt(1 - self.beta2 ** self.t)
        for p, m, v in zip(self.params, self.m, self.v):
            if p.grad is None:
                continue
            m.mul_(self.beta1).add_(p.grad, alpha=1 - self.beta1)
            v.mul_(self.beta2).addcmul_(p.grad, p.grad, value=1 - self.beta2)
            p.addcdiv_(m, (v.sqrt() / root_c2).add_(self.eps), value=-step_size)


def cosine_lr(lr: float, step: int, horizon: int, floor: float = 0.1) -> float:
    """Learning rate of 1-based ``step``: cosine from ``lr`` (step 1) to ``floor * lr`` at ``horizon``
    steps, flat after it."""
    t = min(step - 1, horizon) / max(1, horizon)
    return lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * t)))


def episode_probe(ens: TabSwiftEnsemble, rows: int, seed: int) -> Callable[[], None]:
    """One fine-tuning-sized episode's forward pass without gradients, the same rows at every call:
    the workload the fit times to choose its thread count (``faster_thread_count``) and from which it
    estimates the first fine-tuning step (forward + backward ~ 3 forwards per episode)."""
    xs, ys, xq, _ = _episode(ens, np.random.default_rng(seed), rows)
    net = ens.network
    device = net.registers.device
    if ens.task == CLASSIFICATION:
        ys = torch.as_tensor(ys % net.config.max_classes, dtype=torch.long, device=device)
    else:
        mean, std = target_scale(ys)
        ys = torch.as_tensor((ys - mean) / std, dtype=torch.float32, device=device)
    xs, xq = (torch.as_tensor(a, dtype=torch.float32, device=device) for a in (xs, xq))

    def run() -> None:
        with torch.no_grad():
            net(xs, ys, xq, ens.task)

    return run


def episode_loss(ens: TabSwiftEnsemble, rng: np.random.Generator, rows: int, device) -> torch.Tensor:
    xs, ys, xq, yq = _episode(ens, rng, rows)
    net = ens.network
    t = lambda a, dt=torch.float32: torch.as_tensor(a, dtype=dt, device=device)  # noqa: E731
    if ens.task == CLASSIFICATION:
        out = net(t(xs), t(ys, torch.long), t(xq), CLASSIFICATION).prediction[:, :ens.n_classes_]
        return F.cross_entropy(out.float(), t(yq, torch.long))
    mean, std = target_scale(ys)
    pred = net(t(xs), t((ys - mean) / std), t(xq), ens.task).prediction.float()
    target = t((yq - mean) / std)
    return F.mse_loss(pred, target) + F.l1_loss(pred, target)


def _train_step(ens: TabSwiftEnsemble, opt: Adam, params, rng: np.random.Generator, rows: int,
                episodes_per_step: int, lr: float) -> None:
    """One optimizer step on the mean loss of ``episodes_per_step`` episodes, gradients clipped to norm 1."""
    net = ens.network
    net.train()
    opt.zero_grad()
    device = net.registers.device
    loss = sum(episode_loss(ens, rng, rows, device) for _ in range(episodes_per_step)) / episodes_per_step
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.lr = lr
    opt.step()


def _validate(ens: TabSwiftEnsemble, score_fn: Callable[[], float], clock) -> Tuple[float, float]:
    """(the validation score of the weights as they are now, the seconds it took); cached contexts are stale."""
    ens.network.eval()
    ens.clear_cache()
    t0 = clock()
    score = score_fn()
    return score, clock() - t0


def _score_pretrained(score_fn, initial_score: Optional[Tuple[float, float]], clock) -> Tuple[float, float]:
    """(step 0's score, a validation pass's seconds, re-measured at each pass): the caller's measurement where it
    has one; -inf without validation."""
    if initial_score is not None and score_fn is not None:
        return initial_score
    t_eval = clock()
    score0 = score_fn() if score_fn else float("-inf")
    return score0, clock() - t_eval


def fine_tune(ens: TabSwiftEnsemble, score_fn: Optional[Callable[[], float]], steps: int, lr: float,
              episodes_per_step: int, rows: int, eval_every: int, patience: int, seed: int,
              deadline: Optional[float] = None, schedule_steps: Optional[int] = None,
              first_step_seconds: float = 0.0, clock: Callable[[], float] = time.time,
              initial_score: Optional[Tuple[float, float]] = None) -> Dict:
    """Fine-tune ``ens.network`` in place; returns a summary with the best step (0 = pretrained).

    ``score_fn=None`` (refit on all rows, no validation): run exactly ``steps`` steps, keep the result.
    ``schedule_steps`` (default ``steps``) is the cosine horizon: a refit that replays the best step
    count of a validated run passes that run's horizon, so its learning rates are the same.
    ``deadline`` is on ``clock``'s scale; ``first_step_seconds``: the expected duration of step 1.
    ``initial_score``: ``(score, seconds)`` of ``score_fn`` on the pretrained weights when the caller
    has just measured it, so step 0 is not scored twice."""
    net = ens.network
    if ens.task == CLASSIFICATION and ens.n_classes_ > net.config.max_classes:
        logger.log(20, f"\tTabSwift: fine-tuning skipped: {ens.n_classes_} classes > C_max="
                       f"{net.config.max_classes} (the hierarchy runs on group labels)")
        return {"fine_tune_steps": 0, "best_step": 0, "skipped": "too many classes"}
    rng = np.random.default_rng(seed)
    eval_every = steps + 1 if score_fn is None else eval_every
    score0, t_eval = _score_pretrained(score_fn, initial_score, clock)
    # step 0 counts: a later step is kept only if it scores strictly better than the pretrained weights
    best = {"score": score0, "step": 0, "state": copy.deepcopy(net.state_dict())}
    t_step, history, t0 = max(0.0, float(first_step_seconds)), [(0, score0)], clock()
    params = [p for n, p in net.named_parameters() if not n.startswith(("layer_heads", "exit_heads"))]
    opt, horizon = Adam(params, lr=lr), max(1, schedule_steps or steps)
    bad, step, stop_reason = 0, 0, "steps"
    for step in range(1, steps + 1):
        # a step (and the validation pass due after it) must end by the deadline, not merely start before
        # it: in a 2-fold bag a pass begun at the deadline pushes the first fold past half the bag's
        # limit, and AutoGluon then skips the whole bag
        due = score_fn is not None and (step % eval_every == 0 or step == steps)
        if deadline is not None and clock() + t_step + (t_eval if due else 0.0) > deadline:
            stop_reason, step = "time", step - 1
            break
        t_start = clock()
        _train_step(ens, opt, params, rng, rows, episodes_per_step, cosine_lr(lr, step, horizon))
        t_step = clock() - t_start
        if not due:
            continue
        score, t_eval = _validate(ens, score_fn, clock)
        history.append((step, score))
        if score > best["score"]:
            best, bad = {"score": score, "step": step, "state": copy.deepcopy(net.state_dict())}, 0
            continue
        bad += 1
        if bad >= patience:
            stop_reason = "early_stopping"
            break
    return _finish(ens, score_fn, best, step, history, stop_reason, lambda: clock() - t0)


def _finish(ens: TabSwiftEnsemble, score_fn, best: Dict, step: int, history, stop_reason: str,
            elapsed: Callable[[], float]) -> Dict:
    """Keep the best step's weights (a run without validation keeps its last step), mark the exit heads stale
    when the backbone moved, and summarize (``elapsed``: the seconds since fine-tuning began, read last)."""
    net = ens.network
    if score_fn is None:
        best["step"] = step
    else:
        net.load_state_dict(best["state"])
    if best["step"] > 0 and net.n_exit_layers:  # the backbone moved; the heads still read the old one
        net.exit_heads_stale = True
    net.eval()
    ens.clear_cache()
    return {"fine_tune_steps": step, "best_step": best["step"], "best_val_score": best["score"],
            "zero_shot_val_score": history[0][1], "history": history, "stop_reason": stop_reason,
            "fine_tune_seconds": elapsed()}


#: fine_tune="auto": the estimated cost of the minimum useful fine-tuning is multiplied by this before it is
#: compared with the time left.  The step estimate is 3 forward passes of one probe episode per episode
#: (forward + backward); real steps can take up to about twice that (docs/tabswift.md).  The margin does not
#: keep the fit within its time limit (every step checks the deadline before it starts); it keeps a fit from
#: spending a validation pass and a few steps on fine-tuning too short to help.
AUTO_MARGIN = 1.5


def auto_rule(*, has_val: bool, n_classes: Optional[int], max_classes: int, context_rows: int,
              seconds_left: Optional[float], step_seconds: float, min_steps: int, eval_every: int,
              eval_seconds: float = 0.0, check_seconds: float = 0.0, margin: float = AUTO_MARGIN) -> Dict:
    """Whether ``fine_tune="auto"`` fine-tunes, and the rule that decided it (no side effects).

    In this order: no validation rows -> no (nothing could tell the fine-tuned weights from the
    pretrained ones, and keeping them blind is how fine-tuning ends worse than zero-shot); more classes
    than the network's C_max -> no (the class hierarchy runs on group labels, which fine-tuning does
    not train); fewer than 2 context rows -> no (an episode needs a support and a query row); no time
    limit -> yes; otherwise yes exactly when ``margin`` x (``min_steps`` steps of ``step_seconds``
    and the validation checks they bring, one every ``eval_every`` steps plus step 0's, each
    ``eval_seconds``) + ``check_seconds`` (scoring the whole ensemble once more afterwards) fits in
    ``seconds_left``, the time left before fine-tuning's deadline.

    Returns ``{"fine_tune": bool, "rule": name, "reason": text}`` plus the numbers a time rule used."""
    if not has_val:
        return {"fine_tune": False, "rule": "no_validation",
                "reason": "no validation rows to compare fine-tuned and pretrained weights on"}
    if n_classes is not None and n_classes > max_classes:
        return {"fine_tune": False, "rule": "too_many_classes",
                "reason": f"{n_classes} classes > C_max={max_classes}: the class hierarchy runs on group labels, "
                          f"which fine-tuning does not train"}
    if context_rows < 2:
        return {"fine_tune": False, "rule": "context_too_small",
                "reason": f"{context_rows} context row(s): an episode needs a support and a query row"}
    if seconds_left is None:
        return {"fine_tune": True, "rule": "no_time_limit", "reason": "no time limit"}
    checks = 1 + math.ceil(min_steps / max(1, eval_every))
    needed = margin * (min_steps * step_seconds + checks * eval_seconds) + check_seconds
    estimate = {"min_steps": int(min_steps), "step_seconds": float(step_seconds),
                "eval_seconds": float(eval_seconds), "check_seconds": float(check_seconds), "margin": float(margin),
                "seconds_needed": float(needed), "seconds_left": float(seconds_left)}
    what = (f"{min_steps} steps (~{step_seconds:.2f} s each) and {checks} validation checks (~{eval_seconds:.2f} s "
            f"each), x{margin:g}, + {check_seconds:.1f} s for the final check: ~{needed:.1f} s")
    if needed > seconds_left:
        return {"fine_tune": False, "rule": "time", **estimate,
                "reason": f"too little time: {what} needed, {max(0.0, seconds_left):.1f} s left before the "
                          f"fine-tuning deadline"}
    return {"fine_tune": True, "rule": "time_fits", **estimate,
            "reason": f"{what} needed, {seconds_left:.1f} s left before the fine-tuning deadline"}


class Schedule(NamedTuple):
    """What fine-tuning runs: at most ``steps`` steps of ``episodes_per_step`` episodes of ``rows`` rows at peak
    rate ``lr`` (cosine), a validation check every ``eval_every`` steps, stopping after ``patience`` checks without
    a better score; episodes drawn from ``seed``."""
    steps: int
    lr: float
    episodes_per_step: int
    rows: int
    eval_every: int
    patience: int
    seed: int


class Deadlines(NamedTuple):
    """When fine-tuning must end (``fine_tune``) and the whole ensemble's check after it (``check``), on the
    caller's clock (None: no limit); ``first_step_seconds``: the expected duration of the first step."""
    fine_tune: Optional[float]
    check: Optional[float]
    first_step_seconds: float = 0.0


def fine_tune_auto(ens: TabSwiftEnsemble, score_fn: Callable[[], float], full_score_fn: Callable[[], float],
                   schedule: Schedule, deadlines: Deadlines, *, eval_share: float, min_steps: int,
                   clock: Callable[[], float] = time.time) -> Dict:
    """``fine_tune="auto"`` with validation rows: decide (``auto_rule``), fine-tune, and keep the result only
    if the whole ensemble validates better with it.

    ``score_fn`` scores the validation rows with the members fine-tuning validates with, a share
    ``eval_share`` (<= 1) of the ensemble; ``full_score_fn`` with every member (both higher = better).
    Before anything is measured, the rule is applied to the step estimate alone; then the pretrained
    weights are scored with the whole ensemble (the zero-shot score, and the measured cost of a
    validation pass) and the rule is applied again with it.  Fine-tuning keeps its best step (the
    pretrained weights are step 0); when that is a later step and the subset is not the whole ensemble,
    the whole ensemble is scored once more, if that ends by ``deadlines.check``, and the pretrained
    weights are restored unless it beats zero-shot -- a few members can improve while the ensemble the
    user gets does not.  ``deadlines`` are on ``clock``'s scale.

    Returns ``{"decision": {...}}`` (what the model records in its info) and fine-tuning's summary when it
    ran; ``decision["fine_tuned"]`` says whether the network now holds fine-tuned weights."""
    net = ens.network
    decision: Dict = {"requested": "auto", "fine_tuned": False, "steps_run": 0, "best_step": 0,
                      "zero_shot_val_score": None, "fine_tuned_val_score": None}
    rule = _auto_rule_now(ens, schedule, deadlines, min(int(min_steps), int(schedule.steps)), decision, clock)
    if not rule():  # nothing measured yet: no validation pass is spent on a fit that can not fine-tune
        return {"decision": decision}
    t0 = clock()
    zero = float(full_score_fn())
    full_seconds = clock() - t0
    decision["zero_shot_val_score"] = zero
    whole = eval_share >= 1  # the members fine-tuning validates with are the whole ensemble
    if not rule(eval_seconds=full_seconds * min(1.0, eval_share), check_seconds=0.0 if whole else full_seconds):
        return {"decision": decision}

    pretrained = (copy.deepcopy(net.state_dict()), net.exit_heads_stale)
    result = fine_tune(ens, score_fn, **schedule._asdict(), deadline=deadlines.fine_tune,
                       first_step_seconds=deadlines.first_step_seconds, clock=clock,
                       initial_score=(zero, full_seconds) if whole else None)
    decision.update(steps_run=int(result["fine_tune_steps"]), best_step=int(result["best_step"]),
                    stop_reason=result["stop_reason"])
    if result["best_step"] == 0:
        decision["reason"] += (f"; fine-tuned {result['fine_tune_steps']} steps, no validation check beat the "
                               f"pretrained weights: zero-shot kept")
        return {**result, "decision": decision}
    if whole:
        tuned = float(result["best_val_score"])
    elif deadlines.check is None or clock() + full_seconds <= deadlines.check:
        tuned = float(full_score_fn())
    else:  # no time to score the whole ensemble again: the subset's verdict stands
        tuned = None
    decision["fine_tuned_val_score"] = tuned
    return _keep_or_restore(ens, result, decision, tuned, zero, pretrained)


def _auto_rule_now(ens: TabSwiftEnsemble, schedule: Schedule, deadlines: Deadlines, min_steps: int,
                   decision: Dict, clock) -> Callable[..., bool]:
    """``auto_rule`` for this ensemble and schedule with the time left now; it writes its rule and reason (and the
    estimate a time rule used) into ``decision``.  ``min_steps``: at most the steps asked for (a run asked for
    fewer steps needs time for those only)."""
    n_classes = ens.n_classes_ if ens.task == CLASSIFICATION else None

    def rule(**measured) -> bool:
        found = auto_rule(has_val=True, n_classes=n_classes, max_classes=ens.network.config.max_classes,
                          context_rows=len(ens.y_context_), min_steps=min_steps, eval_every=int(schedule.eval_every),
                          seconds_left=None if deadlines.fine_tune is None else deadlines.fine_tune - clock(),
                          step_seconds=float(deadlines.first_step_seconds), **measured)
        go = found.pop("fine_tune")
        decision.update(rule=found.pop("rule"), reason=found.pop("reason"))
        if found:
            decision["estimate"] = found
        return go

    return rule


def _keep_or_restore(ens: TabSwiftEnsemble, result: Dict, decision: Dict, tuned: Optional[float], zero: float,
                     pretrained: Tuple[dict, bool]) -> Dict:
    """The fine-tuned weights stay where the whole ensemble validates better with them (``tuned`` > ``zero``) or
    could not be scored again (``tuned`` None); otherwise the ``pretrained`` weights and stale mark come back."""
    net, best = ens.network, result["best_step"]
    if tuned is None:
        decision["fine_tuned"] = True
        decision["reason"] += (f"; best step {best} beat the pretrained weights on the validation "
                               f"check's members (no time left to score the whole ensemble): fine-tuned kept")
    elif tuned > zero:
        decision["fine_tuned"] = True
        decision["reason"] += (f"; best step {best} validates at {tuned:.6g} against zero-shot "
                               f"{zero:.6g}: fine-tuned kept")
    else:
        net.load_state_dict(pretrained[0])
        net.exit_heads_stale = pretrained[1]
        ens.clear_cache()
        decision["reason"] += (f"; best step {best} improved the validation check's members but "
                               f"the whole ensemble validates at {tuned:.6g} against zero-shot {zero:.6g}: "
                               f"zero-shot kept")
        return {**result, "best_step": 0, "decision": decision}  # the step whose weights the network holds
    return {**result, "decision": decision}


__all__ = ["AUTO_MARGIN", "Adam", "Deadlines", "Schedule", "auto_rule", "cosine_lr", "episode_loss", "episode_probe",
           "fine_tune", "fine_tune_auto"]
