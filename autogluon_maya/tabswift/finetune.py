"""Fine-tuning TabSwift on the user's table (SPEC section 3 "Fine-tuning", like AutoGluon's Mitra).

Each step draws episodes from the training rows -- a random subset split into support and query rows,
seen through a random ensemble member's view (normalization, feature permutation, class shift) so the
network is not tuned to one ordering -- and minimizes the pretraining loss on the queries (CE, or
MSE + MAE on targets standardized with the support's statistics).  Every ``eval_every`` steps
``score_fn`` scores the validation rows (the model passes the first ``fine_tune_eval_members``
members, for speed); the best weights (the pretrained ones count as step 0) are kept, so fine-tuning
never ends worse than zero-shot on that validation check.
"""

from __future__ import annotations

import copy
import logging
import time
from typing import Callable, Dict, Optional

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
              deadline: Optional[float] = None, schedule_steps: Optional[int] = None) -> Dict:
    """Fine-tune ``ens.network`` in place; returns a summary with the best step (0 = pretrained).

    ``score_fn=None`` (refit on all rows, no validation): run exactly ``steps`` steps, keep the result.
    ``schedule_steps`` (default ``steps``) is the cosine horizon: a refit that replays the best step
    count of a validated run passes that run's horizon, so its learning rates are the same."""
    net = ens.network
    device = net.registers.device
    if ens.task == CLASSIFICATION and ens.n_classes_ > net.config.max_classes:
        logger.log(20, f"\tTabSwift: fine-tuning skipped: {ens.n_classes_} classes > C_max="
                       f"{net.config.max_classes} (the hierarchy runs on group labels)")
        return {"fine_tune_steps": 0, "best_step": 0, "skipped": "too many classes"}
    rng = np.random.default_rng(seed)
    if score_fn is None:
        eval_every = steps + 1
    best = {"score": score_fn() if score_fn else float("-inf"), "step": 0, "state": copy.deepcopy(net.state_dict())}
    history = [(0, best["score"])]
    params = [p for n, p in net.named_parameters() if not n.startswith(("layer_heads", "exit_heads"))]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, schedule_steps or steps), eta_min=lr * 0.1)
    bad, step, t0 = 0, 0, time.time()
    stop_reason = "steps"
    for step in range(1, steps + 1):
        if deadline is not None and time.time() > deadline:
            stop_reason = "time"
            step -= 1
            break
        net.train()
        opt.zero_grad(set_to_none=True)
        loss = sum(episode_loss(ens, rng, rows, device) for _ in range(episodes_per_step)) / episodes_per_step
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if score_fn is not None and (step % eval_every == 0 or step == steps):
            net.eval()
            ens.clear_cache()  # weights changed: cached contexts are stale
            score = score_fn()
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
    net.eval()
    ens.clear_cache()
    return {"fine_tune_steps": step, "best_step": best["step"], "best_val_score": best["score"],
            "zero_shot_val_score": history[0][1], "history": history, "stop_reason": stop_reason,
            "fine_tune_seconds": time.time() - t0}


__all__ = ["episode_loss", "fine_tune"]
