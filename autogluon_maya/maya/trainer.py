"""MAYA's training loop, independent of AutoGluon's wrapper: AdamW on the paper's losses (Eq. 9), epochs of
shuffled batches in which each batch is its own IAIL context (Eq. 13), validation passes with early stopping, and
the time budget checked before every step.  The batch and time planning is in ``schedule``, the fitted-model
classes in ``fitted`` (re-exported here: saved predictors pickle them under this module's name)."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, List, NamedTuple, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..common.training import AdaptiveThreads, BestCheckpoint, TimeBudget, autocast, batch_slices
from .fitted import FittedMaya, FittedMayaMembers
from .network import dropout_generator
from .schedule import StepClock, effective_batch_size, patience_stretch, plan_batch, validation_cadence

# FittedMaya and FittedMayaMembers: the module path saved predictors unpickle them by; effective_batch_size: the
# batch rule benchmark scripts read from here
__all__ = ["FittedMaya", "FittedMayaMembers", "TrainConfig", "TrainData", "WeightAverage", "effective_batch_size",
           "make_loss", "make_optimizer", "parameter_groups", "train_maya"]

logger = logging.getLogger(f"autogluon.ext.{__name__}")


def make_loss(kind: str, quantile_levels: Optional[List[float]] = None) -> Callable:
    """Per-row losses, as the paper's L_pred (Eq. 9): cross-entropy (classification), MSE (standardized
    regression); pinball over ``quantile_levels`` (quantile regression, beyond the paper)."""
    if kind == "class":
        return lambda out, y: F.cross_entropy(out.float(), y.long(), reduction="none")
    if kind == "quantile":
        q = torch.tensor(quantile_levels, dtype=torch.float32)

        def pinball(out, y):
            diff = y.float().view(-1, 1) - out.float()
            qq = q.to(out.device)
            return torch.maximum(qq * diff, (qq - 1) * diff).mean(1)

        return pinball
    return lambda out, y: (out.float().view(-1) - y.float().view(-1)).pow(2)


def parameter_groups(net: nn.Module, weight_decay: float) -> List[dict]:
    """AdamW groups, as the paper (FT-Transformer's protocol): decay on the weight matrices of linear maps only,
    not on LayerNorms, biases, embeddings, the tokenizer, [CLS] or PReLU slopes."""
    decay, no_decay = [], []
    for name, q in net.named_parameters():
        if not q.requires_grad:
            continue
        # (the branch-stacked output bias of an MBA block is 2-D but a bias)
        is_matrix = q.ndim >= 2 and not name.endswith("bias") and not name.startswith(("tokenizer.", "label_emb"))
        (decay if is_matrix else no_decay).append(q)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


class WeightAverage:
    """An exponential moving average of the weights, validated beside the live weights (the better is kept).
    The horizon is in epochs, so that it means the same on any table size; early on the decay is lowered to
    ``(1 + t) / (10 + t)`` so that the average does not drag the initialisation along.  Torch's ``AveragedModel``
    keeps the books (buffers, such as the branch weights, are averaged too)."""

    def __init__(self, net: nn.Module, horizon_epochs: float, steps_per_epoch: int):
        from torch.optim.swa_utils import AveragedModel

        decay = 1.0 - 1.0 / max(1.0, horizon_epochs * steps_per_epoch)
        self.decay = decay

        def ema(avg_params, params, num_averaged):
            # AveragedModel calls this once per (device, dtype) group of tensors.  Only floating-point groups
            # are averaged: buffers can be masks (a piecewise-linear embedding's bool masks), which are
            # constants of the fit, keep their first copy, and which lerp does not take.
            if not avg_params or not avg_params[0].is_floating_point():
                return
            t = float(num_averaged)
            torch._foreach_lerp_(avg_params, params, 1.0 - min(decay, (1.0 + t) / (10.0 + t)))

        self.model = AveragedModel(net, multi_avg_fn=ema, use_buffers=True)

    def update(self, net: nn.Module):
        self.model.update_parameters(net)

    @contextmanager
    def swapped_into(self, net: nn.Module):
        """Load the averaged weights into ``net`` for the duration (a validation pass), then put the
        training weights back, so the optimizer's state still matches its parameters."""
        saved = {k: v.detach().clone() for k, v in net.state_dict().items()}
        net.load_state_dict(self.model.module.state_dict())
        try:
            yield
        finally:
            net.load_state_dict(saved)


class TrainData(NamedTuple):
    """One network's training rows, as tensors on the training device."""
    x_num: torch.Tensor
    x_cat: torch.Tensor
    y_label: torch.Tensor  # what IAIL embeds as a context row's label (Eq. 13)
    y_target: torch.Tensor  # what the loss compares the prediction with (Eq. 9)
    sample_weight: Optional[torch.Tensor] = None
    # the inference context (Eq. 14) as (x_num, x_cat, y_label) where it is a subset of the rows
    # (``max_context_rows``, ``context.draw_context``); None: every training row, the paper's
    context: Optional[tuple] = None

    def __len__(self) -> int:
        return len(self.x_num)

    def context_rows(self) -> tuple:
        """(x_num, x_cat, y_label) of the rows every validation pass and the final model encode as context."""
        return self.context if self.context is not None else (self.x_num, self.x_cat, self.y_label)

    @property
    def context_size(self) -> int:
        return len(self.context_rows()[0])

    def with_context(self, rows) -> "TrainData":
        """This data with the context restricted to ``rows`` (indices); None keeps every row."""
        if rows is None:
            return self
        idx = torch.as_tensor(rows, dtype=torch.long, device=self.x_num.device)
        # (not ``_replace``: it counts the fields by ``len``, which here counts the rows)
        return TrainData(self.x_num, self.x_cat, self.y_label, self.y_target, self.sample_weight,
                         (self.x_num[idx], self.x_cat[idx], self.y_label[idx]))


@dataclass(frozen=True)
class TrainConfig:
    """How one network trains.  ``params``: checked settings (``defaults.check_params``), ``batch_size`` an int;
    ``loss_fn``: per-row losses (``make_loss``); ``num_threads`` > 1 on a CPU lets ``AdaptiveThreads`` pick 1 or
    that many; ``reserve_passes``: encoding passes the caller runs after training, kept out of the budget."""
    params: dict
    loss_fn: Callable
    device: torch.device
    seed: int
    max_epochs: int
    num_threads: Optional[int] = None
    reserve_passes: int = 0
    log_every: int = 10


def make_optimizer(net: nn.Module, params: dict) -> torch.optim.AdamW:
    """AdamW at a constant rate with decay on weight matrices only, the paper's recipe (Appendix B.2, after
    FT-Transformer); a plateau cut with decay on every parameter validated no better (docs/maya.md, "The schedule
    and the batch, judged again").  Fused AdamW updates every parameter in one kernel instead of a loop over them."""
    groups = parameter_groups(net, params["weight_decay"])
    return torch.optim.AdamW(groups, lr=params["learning_rate"], fused=True)


class _Validation:
    """The validation passes of one network: encode the context, score the validation rows (the live weights and,
    with a weight average, the average), keep the better as the best so far (``BestCheckpoint``, which also
    counts the patience), and set the cadence of passes after the first one
    (``validation_cadence``).  ``history`` holds (epoch, seconds since the fit started, score)."""

    def __init__(self, fitted: FittedMaya, data: TrainData, score_fn: Callable, cfg: TrainConfig,
                 ckpt: BestCheckpoint, weight_avg: Optional[WeightAverage], clock: StepClock,
                 budget: TimeBudget, kept_back: Callable[[], float], batch_size: int):
        self.fitted, self.data, self.score_fn, self.cfg = fitted, data, score_fn, cfg
        self.ckpt, self.weight_avg, self.clock = ckpt, weight_avg, clock
        self.budget, self.kept_back, self.batch_size = budget, kept_back, batch_size
        self.every, self.last = 1, 0  # epochs between passes; the epoch of the last pass
        self.history: List[tuple] = []
        self.context_epoch = None  # the epoch whose weights encoded fitted's current context
        self.best_is_average = None  # with an average: whether the kept weights are the average

    def due(self, epoch: int) -> bool:
        return epoch - self.last >= self.every

    def run(self, epoch: int, epoch_train_s: float, loss: Optional[torch.Tensor]) -> bool:
        """One pass after ``epoch``; False when its measured duration (the first time: an estimate from the
        steps) no longer fits in the budget beside what training keeps back."""
        data, net = self.data, self.fitted.net
        t_val = self.clock.encode_estimate(data.context_size + 1024, self.batch_size) * (2 if self.weight_avg else 1)
        if self.budget.remaining() < t_val + self.kept_back():
            return False
        tv = time.perf_counter()
        since = epoch - self.last
        self.fitted.set_context(*data.context_rows())
        score = self.score_fn(self.fitted)
        self.context_epoch = epoch
        kept = net
        if self.weight_avg is not None:
            # The average wins when training has settled but lags while the score still moves fast: score
            # both, keep the better (always keeping the average loses where it lags, docs/maya.md).
            with self.weight_avg.swapped_into(net):
                self.fitted.set_context(*data.context_rows())
                avg_score = self.score_fn(self.fitted)
            if np.isfinite(avg_score) and not avg_score < score:
                score, kept = avg_score, self.weight_avg.model.module
            else:  # fitted's context holds the average's encodings, not the live ones
                self.context_epoch = None
        if self.ckpt.update(score, epoch, kept, epochs_since_last=since) and self.weight_avg is not None:
            self.best_is_average = kept is not net
        self.clock.validation = time.perf_counter() - tv
        if self.last == 0:
            self.every = validation_cadence(self.cfg.params["validation_every"], self.clock.validation,
                                            epoch_train_s)
        self.last = epoch
        # exact seconds: rounded ones put a best last epoch past the member's end (seconds_to_best > train_seconds)
        self.history.append((epoch, self.budget.elapsed(), float(score)))
        if epoch % self.cfg.log_every == 0 or epoch == 1:
            logger.log(15, f"\tMAYA epoch {epoch}: loss={loss.item() if loss is not None else float('nan'):.4f} "
                           f"val={score:.4f} (best {self.ckpt.best_score:.4f} @ {self.ckpt.best_epoch})")
        return True


@dataclass
class _Run:
    """One network's training run: what every epoch reads, and the counts its summary reports."""
    fitted: FittedMaya
    opt: torch.optim.Optimizer
    data: TrainData
    cfg: TrainConfig
    batch_size: int  # 0: no step fits in the budget (``stop_reason`` says why)
    budget: TimeBudget
    clock: StepClock
    threads: AdaptiveThreads
    weight_avg: Optional[WeightAverage]
    ckpt: BestCheckpoint
    rng: np.random.Generator
    stop_reason: str
    val: Optional[_Validation] = None
    steps: int = 0
    epochs: int = 0  # epochs completed
    epoch_time: float = 0.0  # seconds of the last epoch, its validation pass included
    epoch_train_s: float = 0.0  # seconds of the last epoch's steps
    loss: Optional[torch.Tensor] = None  # the last batch's

    def kept_back(self) -> float:
        """Seconds held back from training: the final context encoding, plus the caller's passes after it."""
        return self.clock.encode_estimate(self.data.context_size, self.batch_size) * (1 + self.cfg.reserve_passes)


def _start(fitted: FittedMaya, data: TrainData, cfg: TrainConfig, budget: TimeBudget,
           val_score_fn: Optional[Callable[[FittedMaya], float]]) -> _Run:
    """The optimizer (``make_optimizer``), the batch the budget allows (``plan_batch``), patience in epochs
    stretched on a small table (``patience_stretch``), the weight average and the validation passes."""
    net, params, n = fitted.net, cfg.params, len(data)
    validated = val_score_fn is not None
    batch_size = max(2, min(int(params["batch_size"]), n))
    stretch = patience_stretch(n, batch_size)
    opt = make_optimizer(net, params)
    patience = params["patience"]
    ckpt = BestCheckpoint(patience=patience * stretch if validated and patience is not None else None)
    # adaptive threads trade bit-for-bit reproducibility (1- and 2-thread gradients differ in the last
    # digits) for speed under load; adaptive_threads=False keeps the given count
    adaptive = cfg.device.type == "cpu" and params["adaptive_threads"]
    threads = AdaptiveThreads(cfg.num_threads if adaptive else 1)
    batch_size, why = plan_batch(net, data, batch_size, budget, validated)
    if why:
        logger.log(20, f"\tMAYA: {why}")
    ema_epochs = params["ema_epochs"] if batch_size else None
    weight_avg = WeightAverage(net, float(ema_epochs), int(np.ceil(n / batch_size))) if ema_epochs else None
    run = _Run(fitted, opt, data, cfg, batch_size, budget, StepClock(), threads, weight_avg, ckpt,
               np.random.default_rng(cfg.seed), stop_reason="max_epochs" if batch_size else why)
    if validated:
        run.val = _Validation(fitted, data, val_score_fn, cfg, ckpt, weight_avg, run.clock, budget, run.kept_back,
                              batch_size)
    return run


def _train_epoch(run: _Run) -> tuple:
    """One pass over the rows in shuffled batches: (steps taken, whether the budget cut the epoch short, the
    last batch's loss).  No step starts that cannot end before what training keeps back (``_Run.kept_back``)."""
    net, data, cfg, budget, clock = run.fitted.net, run.data, run.cfg, run.budget, run.clock
    params, loss_fn, device = cfg.params, cfg.loss_fn, cfg.device
    use_bw = params["use_branch_weights"] and params["num_branch"] > 1
    net.train()
    steps, loss, reserve = 0, None, run.kept_back()
    for idx in batch_slices(len(data), run.batch_size, run.rng):
        if budget.remaining() < clock.step + reserve:
            return steps, True, loss
        t_step = time.perf_counter()
        run.threads.before_step(allow_probe=budget.remaining() > 10 * clock.step + reserve)
        idx_t = torch.from_numpy(idx).to(device)
        yl, yt = data.y_label[idx_t], data.y_target[idx_t]
        with autocast(device):
            out, branches = net.forward_train(data.x_num[idx_t], data.x_cat[idx_t], yl, return_branches=True)
        per_row = loss_fn(out, yt)
        w = data.sample_weight
        loss = (per_row * w[idx_t]).sum() / w[idx_t].sum() if w is not None else per_row.mean()
        run.opt.zero_grad(set_to_none=True)
        loss.backward()
        run.opt.step()
        if use_bw:
            net.update_branch_weights(branches, lambda q: loss_fn(q, yt).mean(), params["branch_momentum"])
        if run.weight_avg is not None:
            run.weight_avg.update(net)
        run.threads.after_step()
        steps += 1
        clock.record_step(time.perf_counter() - t_step)
        reserve = run.kept_back()
    return steps, False, loss


def _validate_after(run: _Run, epoch: int, interrupted: bool) -> bool:
    """A validation pass after ``epoch`` where one is due, or where the budget does not hold another epoch, a
    pass after it, the final encoding and one more pass as a margin; False when a pass no longer fits."""
    last_chance = run.budget.remaining() < run.epoch_train_s + 2 * (run.clock.validation or 0.0) + run.kept_back()
    if run.val.due(epoch) or epoch == run.cfg.max_epochs or interrupted or last_chance:
        return run.val.run(epoch, run.epoch_train_s, run.loss)
    return True


def _run_epochs(run: _Run):
    """Epochs until ``max_epochs``, early stopping or the budget; ``run.stop_reason`` records which."""
    budget, val = run.budget, run.val
    for epoch in range(1, run.cfg.max_epochs + 1 if run.batch_size else 1):
        # keep time for the context encoding that follows training when the restored weights need it
        if run.epoch_time and budget.remaining() < run.epoch_time + run.kept_back():
            run.stop_reason = "time: not enough left for another epoch"
            if val is not None and val.last < run.epochs:
                val.run(run.epochs, run.epoch_train_s, run.loss)  # the epochs since the last pass may hold the best
            return
        t0, t_train = budget.elapsed(), time.perf_counter()
        done, interrupted, epoch_loss = _train_epoch(run)
        run.steps, run.loss = run.steps + done, epoch_loss if epoch_loss is not None else run.loss
        if interrupted:
            run.stop_reason = "time: not enough left for another step"
        if run.steps == 0:
            return
        run.epoch_train_s = time.perf_counter() - t_train
        run.epochs = epoch
        if val is not None and not _validate_after(run, epoch, interrupted):
            run.stop_reason = "time: not enough left for a validation pass"
            return
        run.epoch_time = budget.elapsed() - t0
        if interrupted:
            return
        if run.ckpt.should_stop():
            run.stop_reason = "early stopping"
            return


def _finish(run: _Run) -> dict:
    """Restores the best weights (or, without validation, ships the weight average) and returns the summary."""
    net, ckpt, val, weight_avg = run.fitted.net, run.ckpt, run.val, run.weight_avg
    restored = ckpt.best_state is not None
    if restored:
        ckpt.restore(net)
    elif weight_avg is not None:  # no validation (refit_full): ship the average of the last steps
        net.load_state_dict(weight_avg.model.module.state_dict())
    final_epoch = ckpt.best_epoch if restored else run.epochs
    context_epoch = val.context_epoch if val is not None else None
    return {"steps": run.steps, "epochs": run.epochs, "best_epoch": final_epoch,
            "best_score": ckpt.best_score if restored else None,
            "epoch_time": run.epoch_time, "history": val.history if val is not None else [],
            "final_lr": run.opt.param_groups[0]["lr"], "batch_size": run.batch_size, "stop_reason": run.stop_reason,
            "context_fresh": context_epoch is not None and context_epoch == final_epoch
            and (restored or context_epoch == run.epochs),
            "step_seconds": run.clock.step, "validation_seconds": run.clock.validation,
            "threads": run.threads.history, "weight_average_decay": weight_avg.decay if weight_avg else None,
            "best_is_average": val.best_is_average if val is not None else None}


def train_maya(fitted: FittedMaya, data: TrainData, cfg: TrainConfig, budget: TimeBudget,
               val_score_fn: Optional[Callable[[FittedMaya], float]] = None) -> dict:
    """Trains ``fitted.net`` on ``data``: AdamW (``make_optimizer``), the batch the budget allows (``plan_batch``),
    epochs of shuffled batches (``_train_epoch``), validation passes with early stopping on ``val_score_fn``
    (higher is better) and the best weights restored (``_Validation``).  The budget is checked before every step,
    encoding and validation pass against their measured durations; on time it stops and keeps the best (or last)
    weights.  The summary's ``context_fresh``: whether the context was encoded with the weights ``fitted`` ends
    with."""
    run = _start(fitted, data, cfg, budget, val_score_fn)
    # this member's dropout masks come from its own generator: members trained in parallel threads must
    # not draw from one shared stream (see network.dropout_generator)
    with dropout_generator(torch.Generator().manual_seed(int(cfg.seed))):
        _run_epochs(run)
    if run.stop_reason.startswith(("time", "infeasible")):
        logger.log(15, f"\tStopping MAYA after epoch {run.epochs}: {run.stop_reason}")
    return _finish(run)
