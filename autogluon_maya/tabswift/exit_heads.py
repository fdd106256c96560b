"""Training a fitted TabSwift network's exit heads on the user's table, backbone frozen (TabSwift paper Sec. 3.3;
pretraining stage 3 in miniature): after fine-tuning moved the backbone, or on heads just added to a checkpoint
that has none (the authors' released weights).  Episodes are drawn as fine-tuning draws them (``finetune``)."""

from __future__ import annotations

import time
from typing import Callable, Dict, Optional

import numpy as np
import torch
import torch.nn.functional as F

from .engine import target_scale
from .ensemble import TabSwiftEnsemble
from .finetune import Adam, _episode
from .losses import EXIT_TOLERANCE, exit_targets, task_loss
from .network import CLASSIFICATION

EXIT_LR = 1e-3            # per-layer and exit heads only (pretraining stage 3 uses the same peak rate)


def exit_episode_loss(ens: TabSwiftEnsemble, rng: np.random.Generator, rows: int, device) -> Dict[str, torch.Tensor]:
    """Stage-3 loss on one episode of the user's rows: each exit layer's prediction head gets the task
    loss, each exit head a BCE on "this layer already agrees with the final layer" (``losses``: the same per-layer
    task loss and agreement targets as pretraining stage 3)."""
    xs, ys, xq, yq = _episode(ens, rng, rows)
    net = ens.network
    t = lambda a, dt=torch.float32: torch.as_tensor(a, dtype=dt, device=device)  # noqa: E731
    if ens.task == CLASSIFICATION:
        n_classes = torch.tensor([ens.n_classes_], device=device)
        out = net(t(xs), t(ys, torch.long), t(xq), CLASSIFICATION, return_layers=True)
        target = t(yq, torch.long)
    else:
        n_classes = torch.tensor([0], device=device)
        mean, std = target_scale(ys)
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


__all__ = ["EXIT_LR", "exit_episode_loss", "retrain_exit_heads"]
