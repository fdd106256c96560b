"""Training and cached inference for MAYA, independent of AutoGluon's wrapper.

``FittedMaya`` holds the network plus the cached context (encoder outputs of every training row,
their per-IAIL-block key projections and label embeddings) as buffers, so ``.to(device)`` and
pickling move everything together, and a model trained on GPU loads on CPU.
"""

from __future__ import annotations

import logging
from typing import Callable, List, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..common.training import BestCheckpoint, TimeBudget, autocast, batch_slices
from .network import MayaNetwork

logger = logging.getLogger(f"autogluon.ext.{__name__}")


def make_loss(kind: str, quantile_levels: Optional[List[float]] = None) -> Callable:
    """Per-row losses: CE (classification), MSE (standardized regression), pinball (quantile)."""
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
        """Encode every context row once; queries then only run the encoder on themselves.

        Returns the row encodings (the training memory reuses them) without keeping them: only the
        key projections and label embeddings are needed for prediction and saved with the model."""
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
    def predict_raw(self, x_num: torch.Tensor, x_cat: torch.Tensor, chunk_size: int = 1024,
                    topk: Optional[int] = None) -> torch.Tensor:
        """Raw outputs (logits / standardized values) for queries, in chunks.

        Memory is O(chunk x context_size); the chunk shrinks for large contexts so the similarity
        matrix stays under ~64M entries.
        """
        self.net.eval()
        keys = [getattr(self, f"ctx_keys_{i}") for i in range(self.n_keys)]
        chunk = max(1, min(chunk_size, (1 << 26) // max(1, self.context_size)))
        outs = []
        for s in range(0, len(x_num), chunk):
            q = self.net.encode(x_num[s:s + chunk], x_cat[s:s + chunk]).float()
            outs.append(self.net.decode(q, keys, self.ctx_values, topk=topk).float())
        if not outs:  # zero query rows: keep the (0, out_dim) shape callers index into
            return torch.zeros(0, self.net.predictor.out_features, device=x_num.device)
        return torch.cat(outs)


MIN_STEPS_PER_EPOCH = 8


def effective_batch_size(batch_size: int, n: int) -> int:
    """``batch_size``, lowered on small tables so an epoch has at least 8 optimizer steps (never below 32).

    Early stopping and the LR schedule count epochs: with 300 rows and batch 256 an epoch would be a
    single step, so a patience of 16 epochs would give up after 16 steps (measured: a bagged fit of
    breast cancer with 227 rows per fold stayed at majority-class accuracy).
    """
    return max(2, min(batch_size, max(32, n // MIN_STEPS_PER_EPOCH)))


def train_maya(fitted: FittedMaya, *, x_num, x_cat, y_label, y_target, sample_weight, loss_fn,
               params: dict, device: torch.device, budget: TimeBudget, seed: int,
               val_score_fn: Optional[Callable[[FittedMaya], float]] = None,
               max_epochs: int, log_every: int = 10) -> dict:
    """AdamW training with early stopping on ``val_score_fn`` (higher is better) and best-epoch restore.

    Tensors are already on ``device``.  Returns a summary: epochs run, best epoch, rows seen, etc.
    Raises nothing on timeout: it stops and keeps the best (or last) weights, leaving the caller to
    raise ``TimeLimitExceeded`` only if not a single step could run.
    """
    net = fitted.net
    # the fused AdamW kernel is ~4x faster per step than the default loop (measured on 2 CPU cores)
    opt = torch.optim.AdamW(net.parameters(), lr=params["learning_rate"], weight_decay=params["weight_decay"],
                            fused=True)
    # Validation score plateaus while the loss is still noisy at a constant rate: cutting the rate on
    # a plateau (torch's scheduler; scores are higher-is-better) lets training settle into a minimum.
    # Without validation data (refit_full: a fixed epoch count) there is no plateau to detect, so the
    # rate decays along a cosine over those epochs instead.
    scheduler, cosine = None, None
    if params.get("lr_scheduler", "plateau") == "plateau":
        if val_score_fn is not None:
            scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
                opt, mode="max", factor=params.get("lr_plateau_factor", 0.3),
                patience=params.get("lr_plateau_patience", 5), min_lr=params["learning_rate"] * 1e-3)
        else:
            cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, max_epochs),
                                                                eta_min=params["learning_rate"] * 1e-2)
    rng = np.random.default_rng(seed)
    ckpt = BestCheckpoint(patience=params["patience"] if val_score_fn is not None else None)
    use_bw = params["use_branch_weights"] and params["num_branch"] > 1
    n, steps, epochs_done, epoch_time = len(x_num), 0, 0, 0.0
    batch_size = effective_batch_size(int(params["batch_size"]), n)
    history = []  # (epoch, seconds since fit start, validation score)
    memory_size = int(params.get("train_context_size") or 0)
    memory_enc = None  # encodings from the last set_context, if the weights have not changed since
    for epoch in range(1, max_epochs + 1):
        if epoch_time and budget.remaining() < epoch_time:
            logger.log(15, f"\tStopping MAYA at epoch {epoch - 1}: not enough time left for another epoch")
            break
        t0 = budget.elapsed()
        use_memory = memory_size > 0 and n > 2
        if use_memory and memory_enc is None:
            memory_enc = fitted.set_context(x_num, x_cat, y_label)
        net.train()
        interrupted = False
        for idx in batch_slices(n, batch_size, rng):
            if budget.expired():
                interrupted = True
                break
            idx_t = torch.from_numpy(idx).to(device)
            yl, yt = y_label[idx_t], y_target[idx_t]
            mem = {}
            if use_memory:
                m_idx = torch.from_numpy(rng.choice(n, size=min(memory_size, n), replace=False)).to(device)
                mem = {"memory_enc": memory_enc[m_idx], "memory_y": y_label[m_idx],
                       "memory_mask": idx_t.view(-1, 1) == m_idx.view(1, -1)}
            with autocast(device):
                out, branches = net.forward_train(x_num[idx_t], x_cat[idx_t], yl, return_branches=True, **mem)
            per_row = loss_fn(out, yt)
            loss = (per_row * sample_weight[idx_t]).sum() / sample_weight[idx_t].sum() \
                if sample_weight is not None else per_row.mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if use_bw:
                net.update_branch_weights(branches, lambda p: loss_fn(p, yt).mean(), params["branch_momentum"])
            steps += 1
        if steps == 0:
            break
        epochs_done = epoch
        memory_enc = None  # this epoch's steps changed the weights
        if val_score_fn is not None:
            memory_enc = fitted.set_context(x_num, x_cat, y_label)
            score = val_score_fn(fitted)
            ckpt.update(score, epoch, net)
            if scheduler is not None:
                scheduler.step(score if np.isfinite(score) else -float("inf"))
            history.append((epoch, round(budget.elapsed(), 2), float(score)))
            if epoch % log_every == 0 or epoch == 1:
                logger.log(15, f"\tMAYA epoch {epoch}: loss={loss.item():.4f} val={score:.4f} "
                               f"(best {ckpt.best_score:.4f} @ {ckpt.best_epoch})")
        if cosine is not None:
            cosine.step()
        epoch_time = budget.elapsed() - t0
        if interrupted or ckpt.should_stop():
            break
    if ckpt.best_state is not None:
        ckpt.restore(net)
    return {"steps": steps, "epochs": epochs_done,
            "best_epoch": ckpt.best_epoch if ckpt.best_state is not None else epochs_done,
            "best_score": ckpt.best_score if ckpt.best_state is not None else None,
            "epoch_time": epoch_time, "history": history, "final_lr": opt.param_groups[0]["lr"]}
