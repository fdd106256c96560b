"""Fine-tuning TabSwift on the user's table (beyond the paper, like AutoGluon's Mitra).

Each step draws episodes from the training rows -- a random subset split into support and query rows,
seen through a random ensemble member's view (normalization, feature permutation, class shift) so the
network is not tuned to one ordering -- and minimizes the pretraining loss on the queries (CE, or
MSE + MAE on targets standardized with the support's statistics).  Every ``eval_every`` steps
``score_fn`` scores the validation rows (the model passes the first ``fine_tune_eval_members``
members, for speed); the best weights (the pretrained ones count as step 0) are kept, so fine-tuning
never ends worse than zero-shot on that validation check.

Fine-tuning only trains the backbone and the final heads, and marks the early-exit heads stale
(``TabSwiftNetwork.exit_heads_stale``: the engine refuses to exit with them); ``retrain_exit_heads``
then refits them to the new backbone (backbone frozen), so τ keeps meaning what it meant, and clears
the mark.  Heads still stale at the end of a fit -- no τ, ``fine_tune_exit_steps=0``, no time left --
are dropped (``TabSwiftNetwork.drop_exit_heads``): retraining heads nobody uses costs as much as
fine-tuning, and keeping the pretrained ones would save heads that no longer match the backbone.  The
same function trains fresh heads on a checkpoint that has none (the authors' released weights).

Both loops stop before a step (and a validation pass due after it) that would end past their
deadline; the first step's duration is the caller's estimate (``first_step_seconds``), later ones
the last step's.  ``clock`` is injectable so the stopping rule is tested without wall time.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from typing import Callable, Dict, Optional, Tuple

import numpy as np
import torch
import torch.nn.functional as F

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
        ys = torch.as_tensor((ys - ys.mean()) / (ys.std() if ys.std() > 1e-12 else 1.0), dtype=torch.float32,
                             device=device)
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
    mean, std = ys.mean(), ys.std() if ys.std() > 1e-12 else 1.0
    pred = net(t(xs), t((ys - mean) / std), t(xq), ens.task).prediction.float()
    target = t((yq - mean) / std)
    return F.mse_loss(pred, target) + F.l1_loss(pred, target)


def fine_tune(ens: TabSwiftEnsemble, score_fn: Optional[Callable[[], float]], steps: int, lr: float,
              episodes_per_step: int, rows: int, eval_every: int, patience: int, seed: int,
              deadline: Optional[float] = None, schedule_steps: Optional[int] = None,
              first_step_seconds: float = 0.0, clock: Callable[[], float] = time.time) -> Dict:
    """Fine-tune ``ens.network`` in place; returns a summary with the best step (0 = pretrained).

    ``score_fn=None`` (refit on all rows, no validation): run exactly ``steps`` steps, keep the result.
    ``schedule_steps`` (default ``steps``) is the cosine horizon: a refit that replays the best step
    count of a validated run passes that run's horizon, so its learning rates are the same.
    ``deadline`` is on ``clock``'s scale; ``first_step_seconds``: the expected duration of step 1."""
    net = ens.network
    device = net.registers.device
    if ens.task == CLASSIFICATION and ens.n_classes_ > net.config.max_classes:
        logger.log(20, f"\tTabSwift: fine-tuning skipped: {ens.n_classes_} classes > C_max="
                       f"{net.config.max_classes} (the hierarchy runs on group labels)")
        return {"fine_tune_steps": 0, "best_step": 0, "skipped": "too many classes"}
    rng = np.random.default_rng(seed)
    if score_fn is None:
        eval_every = steps + 1
    t_eval = clock()
    best = {"score": score_fn() if score_fn else float("-inf"), "step": 0, "state": copy.deepcopy(net.state_dict())}
    t_eval = clock() - t_eval  # a validation pass's duration, re-measured at each pass
    t_step = max(0.0, float(first_step_seconds))
    history = [(0, best["score"])]
    params = [p for n, p in net.named_parameters() if not n.startswith(("layer_heads", "exit_heads"))]
    opt = Adam(params, lr=lr)
    horizon = max(1, schedule_steps or steps)
    bad, step, t0 = 0, 0, clock()
    stop_reason = "steps"
    for step in range(1, steps + 1):
        # a step (and the validation pass due after it) must end by the deadline, not merely start before
        # it: in a 2-fold bag a pass begun at the deadline pushes the first fold past half the bag's
        # limit, and AutoGluon then skips the whole bag
        due = score_fn is not None and (step % eval_every == 0 or step == steps)
        if deadline is not None and clock() + t_step + (t_eval if due else 0.0) > deadline:
            stop_reason = "time"
            step -= 1
            break
        t_start = clock()
        net.train()
        opt.zero_grad()
        loss = sum(episode_loss(ens, rng, rows, device) for _ in range(episodes_per_step)) / episodes_per_step
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.lr = cosine_lr(lr, step, horizon)
        opt.step()
        t_step = clock() - t_start
        if due:
            net.eval()
            ens.clear_cache()  # weights changed: cached contexts are stale
            t0_eval = clock()
            score = score_fn()
            t_eval = clock() - t0_eval
            history.append((step, score))
            if score > best["score"]:
                best, bad = {"score": score, "step": step, "state": copy.deepcopy(net.state_dict())}, 0
            else:
                bad += 1
                if bad >= patience:
                    stop_reason = "early_stopping"
                    break
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
            "fine_tune_seconds": clock() - t0}


EXIT_LR = 1e-3            # per-layer and exit heads only (pretraining stage 3 uses the same peak rate)


def exit_episode_loss(ens: TabSwiftEnsemble, rng: np.random.Generator, rows: int, device) -> Dict[str, torch.Tensor]:
    """Stage-3 loss on one episode of the user's rows: each exit layer's prediction head gets the task
    loss, each exit head a BCE on "this layer already agrees with the final layer" (pretraining/losses.py)."""
    # the same per-layer task loss and agreement targets as pretraining stage 3 (imported here: the
    # pretraining package is only needed once early exit is retrained)
    from ..pretraining.losses import EXIT_TOLERANCE, exit_targets, task_loss

    xs, ys, xq, yq = _episode(ens, rng, rows)
    net = ens.network
    t = lambda a, dt=torch.float32: torch.as_tensor(a, dtype=dt, device=device)  # noqa: E731
    if ens.task == CLASSIFICATION:
        n_classes = torch.tensor([ens.n_classes_], device=device)
        out = net(t(xs), t(ys, torch.long), t(xq), CLASSIFICATION, return_layers=True)
        target = t(yq, torch.long)
    else:
        n_classes = torch.tensor([0], device=device)
        mean, std = ys.mean(), ys.std() if ys.std() > 1e-12 else 1.0
        out = net(t(xs), t((ys - mean) / std), t(xq), ens.task, return_layers=True)
        target = t((yq - mean) / std)
    # one episode is a batch of one task for the shared losses
    layers = [p.unsqueeze(0) for p in out.layer_predictions]
    head = [sum(task_loss(p, target.unsqueeze(0), ens.task, n_classes).values()) for p in layers]
    agree = [a[0] for a in exit_targets(layers, out.prediction.detach().unsqueeze(0), ens.task, n_classes,
                                        EXIT_TOLERANCE)]
    bce = [F.binary_cross_entropy_with_logits(s.float(), a) for s, a in zip(out.exit_logits, agree)]
    return {"loss": torch.stack(head).mean() + torch.stack(bce).mean(),
            "agreement": torch.stack([a.mean() for a in agree]).mean()}


def retrain_exit_heads(ens: TabSwiftEnsemble, steps: int, episodes_per_step: int, rows: int, seed: int,
                       deadline: Optional[float] = None, lr: float = EXIT_LR, first_step_seconds: float = 0.0,
                       clock: Callable[[], float] = time.time) -> Dict:
    """Train the per-layer prediction heads and the exit heads on episodes from the training rows,
    backbone frozen (pretraining stage 3 in miniature): after fine-tuning, or on heads just added to a
    checkpoint that has none (``TabSwiftNetwork.add_exit_heads``, e.g. the authors' released weights).

    Why: fine-tuning moves the backbone, so heads calibrated on the pretrained hidden states would read
    states they were never trained on -- an exit decision could then stop a query at a layer whose head
    predicts badly.  The backbone's weights are exactly unchanged by this function.  A step starts only
    if it ends by ``deadline`` (on ``clock``), judged by the last step's duration
    (``first_step_seconds`` before the first).  At least one step clears ``network.exit_heads_stale``;
    none leaves it as it was (the caller drops stale heads)."""
    net = ens.network
    device = net.registers.device
    heads = [p for m in (net.layer_heads, net.exit_heads) for p in m.parameters()]
    if not heads or steps < 1:
        return {"exit_retrain_steps": 0}
    trainable = {name: p.requires_grad for name, p in net.named_parameters()}
    for p in net.parameters():
        p.requires_grad_(False)
    for p in heads:
        p.requires_grad_(True)
    opt = Adam(heads, lr=lr)
    rng = np.random.default_rng(seed + 7919)  # other episodes than fine-tuning drew
    t0, done, agreement = clock(), 0, float("nan")
    t_step = max(0.0, float(first_step_seconds))
    try:
        net.train()
        for step in range(1, steps + 1):
            if deadline is not None and clock() + t_step > deadline:
                break
            t_start = clock()
            opt.zero_grad()
            parts = [exit_episode_loss(ens, rng, rows, device) for _ in range(episodes_per_step)]
            (sum(p["loss"] for p in parts) / len(parts)).backward()
            torch.nn.utils.clip_grad_norm_(heads, 1.0)
            opt.step()
            done, agreement = step, float(sum(p["agreement"] for p in parts) / len(parts))
            t_step = clock() - t_start
    finally:
        for name, p in net.named_parameters():
            p.requires_grad_(trainable[name])
        net.eval()
        ens.clear_cache()
    if done:  # trained on this backbone now, however briefly: the fit's validation check judges them
        net.exit_heads_stale = False
    return {"exit_retrain_steps": done, "exit_retrain_seconds": clock() - t0,
            "exit_retrain_last_agreement": agreement}


__all__ = ["Adam", "cosine_lr", "episode_loss", "episode_probe", "exit_episode_loss", "fine_tune", "retrain_exit_heads"]
