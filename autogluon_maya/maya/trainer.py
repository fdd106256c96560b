"""Training and cached inference for MAYA, independent of AutoGluon's wrapper.  ``FittedMaya`` keeps the
network with its inference context (key projections and label embeddings of every training row) as buffers,
so ``.to(device)`` and pickling move them together and a model trained on GPU loads on CPU."""

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

from ..common.training import AdaptiveThreads, BestCheckpoint, TimeBudget, autocast, batch_slices, torch_threads
from .network import MayaNetwork, dropout_generator

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


class FittedMaya(nn.Module):
    """A trained network together with its inference context."""

    def __init__(self, net: MayaNetwork):
        super().__init__()
        self.net = net
        self.n_keys = len(net.decoder)
        self.register_buffer("ctx_values", torch.zeros(0))
        for i in range(self.n_keys):
            self.register_buffer(f"ctx_keys_{i}", torch.zeros(0))

    @torch.no_grad()
    def set_context(self, x_num: torch.Tensor, x_cat: torch.Tensor, y: torch.Tensor, chunk: int = 1024):
        """Encode every context row once (Eq. 14); queries then run the encoder on themselves only."""
        self.net.eval()
        enc = torch.cat([self.net.encode(x_num[s:s + chunk], x_cat[s:s + chunk]).float()
                         for s in range(0, len(x_num), chunk)])
        for i, k in enumerate(self.net.project_keys(enc)):
            setattr(self, f"ctx_keys_{i}", k)
        self.ctx_values = self.net.embed_labels(y)
        return enc

    @property
    def context_size(self) -> int:
        return self.ctx_values.shape[0]

    @torch.no_grad()
    def predict_raw(self, x_num: torch.Tensor, x_cat: torch.Tensor, chunk_size: int = 1024) -> torch.Tensor:
        """Raw outputs (logits / standardized values) in query chunks; the chunk shrinks for large contexts so
        that the similarity block stays under ~64M entries."""
        self.net.eval()
        keys = [getattr(self, f"ctx_keys_{i}") for i in range(self.n_keys)]
        chunk = max(1, min(chunk_size, (1 << 26) // max(1, self.context_size)))
        outs = []
        for s in range(0, len(x_num), chunk):
            q = self.net.encode(x_num[s:s + chunk], x_cat[s:s + chunk]).float()
            outs.append(self.net.decode(q, keys, self.ctx_values).float())
        if not outs:  # zero query rows: keep the (0, out_dim) shape callers index into
            return torch.zeros(0, self.net.predictor.out_features, device=x_num.device)
        return torch.cat(outs)


class FittedMayaMembers(nn.Module):
    """Networks of one fit trained from different seeds; the wrapper averages their predictions."""

    def __init__(self, members: List[FittedMaya]):
        super().__init__()
        self.members = nn.ModuleList(members)

    def __len__(self) -> int:
        return len(self.members)

    def predict_raw_members(self, x_num: torch.Tensor, x_cat: torch.Tensor) -> List[torch.Tensor]:
        return [m.predict_raw(x_num, x_cat) for m in self.members]


MIN_STEPS_PER_EPOCH = 8
VALIDATION_SHARE = 0.15
MAX_VALIDATION_EVERY = 4


def validation_cadence(setting, validation_seconds: float, epoch_train_seconds: float) -> int:
    """Epochs between validation passes (each encodes every training row as IAIL's context, about half an
    epoch on a CPU).  ``"auto"``: the smallest k <= ``MAX_VALIDATION_EVERY`` keeping validation under
    ``VALIDATION_SHARE`` of the training time; an int as given.  Patience still counts epochs."""
    if setting not in (None, "auto"):
        return max(1, int(setting))
    if not validation_seconds or not epoch_train_seconds or epoch_train_seconds <= 0:
        return 1
    k = int(np.ceil(validation_seconds / (VALIDATION_SHARE * epoch_train_seconds) - 1e-9))
    return int(min(MAX_VALIDATION_EVERY, max(1, k)))


def effective_batch_size(batch_size, n: int, auto_rows: int) -> int:
    """The batch a fit uses on ``n`` rows.  An int as given, capped by ``n`` (the batch is also IAIL's training
    context; the paper's are 1,024-4,096 rows).  ``"auto"``: ``auto_rows`` (``defaults.AUTO_BATCH_ROWS``), lowered
    on small tables to keep ``MIN_STEPS_PER_EPOCH`` steps an epoch (never below 32): patience counts epochs."""
    if batch_size == "auto":
        return max(2, min(int(auto_rows), max(32, n // MIN_STEPS_PER_EPOCH), n))
    return max(2, min(int(batch_size), n))


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


class _Clock:
    """Running estimates of a step's and a validation pass's duration, so that no step starts that cannot end in
    the budget.  A step is 1.5x the median of the last 8 (a maximum would keep a slow thread-count probe's step)."""

    def __init__(self):
        self.recent: List[float] = []
        self.validation = None  # seconds of the last context encoding + validation pass

    @property
    def step(self) -> float:
        return 1.5 * float(np.median(self.recent)) if self.recent else 0.0

    def record_step(self, seconds: float):
        self.recent = (self.recent + [seconds])[-8:]

    def encode_estimate(self, n: int, batch_size: int) -> float:
        """Seconds to encode ``n`` rows: measured by the last validation pass, or half a step per batch before."""
        if self.validation is not None:
            return self.validation
        return 0.5 * self.step * max(1.0, n / max(1, batch_size))


@torch.no_grad()
def estimate_step_seconds(net: MayaNetwork, x_num, x_cat, y_label, batch_size: int, remaining: float = float("inf"),
                          min_steps: int = MIN_STEPS_PER_EPOCH) -> float:
    """A training step's duration at ``batch_size``: a line through timed forward passes on 2 and 16 rows,
    x3 for the backward pass, after an untimed warm-up (a fresh process's first pass pays one-off costs).  The
    16-row pass is skipped when the 2-row one already decides whether ``min_steps`` steps fit in ``remaining``.  It
    keeps a configuration whose single step outlasts the budget (16 layers x batch 4,096 on a CPU) from starting.
    One thread: an upper bound once ``AdaptiveThreads`` picks, and immune to spin-waiting on a loaded machine."""
    was_training = net.training
    net.train()

    def timed(rows: int) -> float:
        t = time.perf_counter()
        net.forward_train(x_num[:rows], x_cat[:rows], y_label[:rows])
        return time.perf_counter() - t

    # fork_rng: the probe's dropout draws must not shift the training run's random stream, or the same
    # seed would train differently with and without a time limit
    with torch_threads(1), torch.random.fork_rng(devices=[]):
        try:
            n = len(x_num)
            timed(min(2, n))
            t2 = timed(min(2, n))
            if n <= 2 or 3.0 * t2 * batch_size / 2 * min_steps <= remaining or 3.0 * t2 * 8 > remaining / min_steps:
                # clearly feasible or clearly not from the small probe (per-row cost falls with rows)
                return 3.0 * t2 * batch_size / min(2, n)
            r = min(16, n)
            t16 = timed(r)
            per_row = max((t16 - t2) / (r - 2), 0.0) if r > 2 else t16 / r
            return 3.0 * max(t16 * batch_size / r if per_row == 0.0 else t2 + per_row * (batch_size - 2), 0.0)
        finally:
            net.train(was_training)


def one_epoch_fits(batch_size: int, step_seconds: float, n: int, remaining: float) -> str:
    """Without validation data (refit_full) nothing can judge a network that stopped within its first epoch
    against the prior, so such a fit must have time for about one epoch: every step of one pass over the ``n``
    rows at ``step_seconds`` each, and the context encoding that follows training (about half a step per batch,
    as ``_Clock.encode_estimate``).  Returns "" when that fits in ``remaining`` seconds, else the reason."""
    steps = int(np.ceil(n / max(1, batch_size)))
    need = 1.5 * steps * step_seconds
    if not np.isfinite(remaining) or need <= remaining:
        return ""
    return (f"infeasible: without validation data a fit must train about one epoch ({steps} steps at batch "
            f"{batch_size}, ~{step_seconds:.2f} s each, and the context encoding: ~{need:.0f} s), "
            f"{max(remaining, 0.0):.0f} s left")


def fit_batch_to_budget(batch_size: int, step_seconds: float, remaining: float, min_steps: int,
                        floor: int = 64) -> tuple:
    """(batch size, reason): the requested batch if ``min_steps`` steps of ``step_seconds`` fit in
    ``remaining`` seconds; else the largest halving (>= ``floor``) that fits, or 0 when none does."""
    if not np.isfinite(remaining) or step_seconds * min_steps <= remaining:
        return batch_size, ""
    b, est = batch_size, step_seconds
    while b // 2 >= floor and est * min_steps > remaining:
        b //= 2
        est = step_seconds * b / batch_size
    if est * min_steps <= remaining:
        return b, (f"batch_size {batch_size} -> {b}: a step was estimated at {step_seconds:.1f} s "
                   f"and {min_steps} steps must fit in the {remaining:.0f} s left")
    return 0, (f"infeasible: a training step at batch {b} was estimated at {est:.1f} s; "
               f"{min_steps} steps do not fit in the {remaining:.0f} s left")


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

    def __len__(self) -> int:
        return len(self.x_num)


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


def patience_stretch(n: int, batch_size: int) -> int:
    """Patience counts epochs; with the paper's batch sizes a small table has one step per epoch, and 16 epochs
    of patience would be 16 steps: the patience is stretched to span at least ``MIN_STEPS_PER_EPOCH`` epochs'
    worth of steps."""
    return max(1, int(np.ceil(MIN_STEPS_PER_EPOCH / max(1, int(np.ceil(n / batch_size))))))


def make_optimizer(net: nn.Module, params: dict) -> torch.optim.AdamW:
    """AdamW at a constant rate with decay on weight matrices only, the paper's recipe (Appendix B.2, after
    FT-Transformer); a plateau cut with decay on every parameter validated no better (docs/maya.md, "The schedule
    and the batch, judged again").  Fused AdamW updates every parameter in one kernel instead of a loop over them."""
    groups = parameter_groups(net, params["weight_decay"])
    return torch.optim.AdamW(groups, lr=params["learning_rate"], fused=True)


def plan_batch(net: MayaNetwork, data: TrainData, batch_size: int, budget: TimeBudget, validated: bool) -> tuple:
    """(the batch the time limit allows, the reason it differs from ``batch_size``): ``MIN_STEPS_PER_EPOCH`` steps
    at the estimated step time must fit in what is left (``fit_batch_to_budget``), and without validation data one
    whole epoch (``one_epoch_fits``).  A batch of 0: no step fits, the reason says why."""
    if not np.isfinite(budget.remaining()):
        return batch_size, ""
    asked, n = batch_size, len(data)
    est = estimate_step_seconds(net, data.x_num, data.x_cat, data.y_label, batch_size, budget.remaining(),
                                MIN_STEPS_PER_EPOCH)
    batch_size, why = fit_batch_to_budget(batch_size, est, budget.remaining(), MIN_STEPS_PER_EPOCH)
    if batch_size and not validated:
        epoch_why = one_epoch_fits(batch_size, est * batch_size / asked, n, budget.remaining())
        if epoch_why:
            batch_size, why = 0, epoch_why
    if why.startswith("infeasible"):
        why += f" ({data.x_num.shape[1] + data.x_cat.shape[1] + 1} tokens per row)"
    return batch_size, why


class _Validation:
    """The validation passes of one network: encode the context, score the validation rows (the live weights and,
    with a weight average, the average), keep the better as the best so far (``BestCheckpoint``, which also
    counts the patience), and set the cadence of passes after the first one
    (``validation_cadence``).  ``history`` holds (epoch, seconds since the fit started, score)."""

    def __init__(self, fitted: FittedMaya, data: TrainData, score_fn: Callable, cfg: TrainConfig,
                 ckpt: BestCheckpoint, weight_avg: Optional[WeightAverage], clock: _Clock,
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
        t_val = self.clock.encode_estimate(len(data) + 1024, self.batch_size) * (2 if self.weight_avg else 1)
        if self.budget.remaining() < t_val + self.kept_back():
            return False
        tv = time.perf_counter()
        since = epoch - self.last
        self.fitted.set_context(data.x_num, data.x_cat, data.y_label)
        score = self.score_fn(self.fitted)
        self.context_epoch = epoch
        kept = net
        if self.weight_avg is not None:
            # The average wins when training has settled but lags while the score still moves fast: score
            # both, keep the better (always keeping the average loses where it lags, docs/maya.md).
            with self.weight_avg.swapped_into(net):
                self.fitted.set_context(data.x_num, data.x_cat, data.y_label)
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


def _train_epoch(net: MayaNetwork, opt, data: TrainData, cfg: TrainConfig, batch_size: int, rng, budget: TimeBudget,
                 clock: _Clock, threads: AdaptiveThreads, weight_avg: Optional[WeightAverage],
                 kept_back: Callable[[], float]) -> tuple:
    """One pass over the rows in shuffled batches: (steps taken, whether the budget cut the epoch short, the
    last batch's loss).  No step starts that cannot end before what training keeps back (``kept_back``)."""
    params, loss_fn, device = cfg.params, cfg.loss_fn, cfg.device
    use_bw = params["use_branch_weights"] and params["num_branch"] > 1
    net.train()
    steps, loss, reserve = 0, None, kept_back()
    for idx in batch_slices(len(data), batch_size, rng):
        if budget.remaining() < clock.step + reserve:
            return steps, True, loss
        t_step = time.perf_counter()
        threads.before_step(allow_probe=budget.remaining() > 10 * clock.step + reserve)
        idx_t = torch.from_numpy(idx).to(device)
        yl, yt = data.y_label[idx_t], data.y_target[idx_t]
        with autocast(device):
            out, branches = net.forward_train(data.x_num[idx_t], data.x_cat[idx_t], yl, return_branches=True)
        per_row = loss_fn(out, yt)
        w = data.sample_weight
        loss = (per_row * w[idx_t]).sum() / w[idx_t].sum() if w is not None else per_row.mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if use_bw:
            net.update_branch_weights(branches, lambda q: loss_fn(q, yt).mean(), params["branch_momentum"])
        if weight_avg is not None:
            weight_avg.update(net)
        threads.after_step()
        steps += 1
        clock.record_step(time.perf_counter() - t_step)
        reserve = kept_back()
    return steps, False, loss


def train_maya(fitted: FittedMaya, data: TrainData, cfg: TrainConfig, budget: TimeBudget,
               val_score_fn: Optional[Callable[[FittedMaya], float]] = None) -> dict:
    """Trains ``fitted.net`` on ``data``: AdamW (``make_optimizer``), the batch the budget allows (``plan_batch``),
    epochs of shuffled batches (``_train_epoch``), validation passes with early stopping on ``val_score_fn``
    (higher is better) and the best weights restored (``_Validation``).  The budget is checked before every step,
    encoding and validation pass against their measured durations; on time it stops and keeps the best (or last)
    weights.  The summary's ``context_fresh``: whether the context was encoded with the weights ``fitted`` ends
    with."""
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
    clock = _Clock()

    def kept_back() -> float:
        """Seconds held back from training: the final context encoding, plus the caller's passes after it."""
        return clock.encode_estimate(n, batch_size) * (1 + cfg.reserve_passes)

    val = _Validation(fitted, data, val_score_fn, cfg, ckpt, weight_avg, clock, budget, kept_back,
                      batch_size) if validated else None
    rng = np.random.default_rng(cfg.seed)
    steps, epochs_done, epoch_time, epoch_train_s, loss = 0, 0, 0.0, 0.0, None
    stop_reason = "max_epochs" if batch_size else why  # batch 0: no step fits in the budget
    # this member's dropout masks come from its own generator: members trained in parallel threads must
    # not draw from one shared stream (see network.dropout_generator)
    with dropout_generator(torch.Generator().manual_seed(int(cfg.seed))):
        for epoch in range(1, cfg.max_epochs + 1 if batch_size else 1):
            # keep time for the context encoding that follows training when the restored weights need it
            if epoch_time and budget.remaining() < epoch_time + kept_back():
                stop_reason = "time: not enough left for another epoch"
                if val is not None and val.last < epochs_done:
                    val.run(epochs_done, epoch_train_s, loss)  # the epochs since the last pass may hold the best
                break
            t0, t_train = budget.elapsed(), time.perf_counter()
            done, interrupted, epoch_loss = _train_epoch(net, opt, data, cfg, batch_size, rng, budget, clock,
                                                         threads, weight_avg, kept_back)
            steps, loss = steps + done, epoch_loss if epoch_loss is not None else loss
            if interrupted:
                stop_reason = "time: not enough left for another step"
            if steps == 0:
                break
            epoch_train_s = time.perf_counter() - t_train
            epochs_done = epoch
            if val is not None:
                # validate now unless the budget holds another epoch, a pass after it, the final encoding and one
                # more pass as a margin
                last_chance = budget.remaining() < epoch_train_s + 2 * (clock.validation or 0.0) + kept_back()
                if (val.due(epoch) or epoch == cfg.max_epochs or interrupted or last_chance) \
                        and not val.run(epoch, epoch_train_s, loss):
                    stop_reason = "time: not enough left for a validation pass"
                    break
            epoch_time = budget.elapsed() - t0
            if interrupted:
                break
            if ckpt.should_stop():
                stop_reason = "early stopping"
                break
    if stop_reason.startswith(("time", "infeasible")):
        logger.log(15, f"\tStopping MAYA after epoch {epochs_done}: {stop_reason}")
    restored = ckpt.best_state is not None
    if restored:
        ckpt.restore(net)
    elif weight_avg is not None:  # no validation (refit_full): ship the average of the last steps
        net.load_state_dict(weight_avg.model.module.state_dict())
    final_epoch = ckpt.best_epoch if restored else epochs_done
    context_epoch = val.context_epoch if val is not None else None
    return {"steps": steps, "epochs": epochs_done, "best_epoch": final_epoch,
            "best_score": ckpt.best_score if restored else None,
            "epoch_time": epoch_time, "history": val.history if val is not None else [],
            "final_lr": opt.param_groups[0]["lr"], "batch_size": batch_size, "stop_reason": stop_reason,
            "context_fresh": context_epoch is not None and context_epoch == final_epoch
            and (restored or context_epoch == epochs_done),
            "step_seconds": clock.step, "validation_seconds": clock.validation,
            "threads": threads.history, "weight_average_decay": weight_avg.decay if weight_avg else None,
            "best_is_average": val.best_is_average if val is not None else None}
