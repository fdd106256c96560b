"""Cached in-context inference for TabSwift: split attention with a context KV cache, and per-query early exit.

``encode_context`` runs registers + support through every block once and keeps, per block, the
context's keys/values (after LN1 and the K/V projections) and the mean register state after the block
(the exit heads' task summary).  Because the context never reads a query, that cache is exact: a
query's prediction depends only on itself and the cache, whatever the query batching.

``predict`` pushes query batches through the blocks against the cache.  With an exit threshold τ a
query leaves at the first layer whose sigmoid(exit logit) >= τ and takes that layer's prediction
head; exited rows are removed from the batch, so later blocks run on fewer rows (the wall-clock
saving is real, not a masked-out computation).  Queries that never pass τ use the final head after
the last block.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

import numpy as np
import torch

from .network import CLASSIFICATION, REGRESSION, TabSwiftNetwork, check_task


def target_scale(y) -> Tuple[float, float]:
    """The mean and (population) standard deviation that standardise regression targets, from the context's labels:
    the one rule of every place that feeds targets to the network (the cached engine, fine-tuning episodes, the
    exit heads' episodes), as the network was pretrained.  A constant target is only shifted (std 1)."""
    a = y.detach().double().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y, dtype=np.float64)
    mean, std = float(a.mean()), float(a.std())
    return mean, (std if std > 1e-12 * (1.0 + abs(mean)) else 1.0)


def _stored(h: torch.Tensor) -> torch.Tensor:
    """A block's input tokens as a cache keeps them for saving: float16 (half the bytes of float32; predictions from
    them differ by ~1e-5 in probability on real tables), float32 where a value is beyond half float16's range."""
    if h.dtype == torch.float16 or float(h.abs().max()) > torch.finfo(torch.float16).max / 2:
        return h.detach().clone()
    return h.detach().to(torch.float16)


@dataclass
class ContextCache:
    """Everything a query needs from the context; tied to the network that built it.

    ``keys``/``values``: per block, (1, H, K + n_support, d_h).  ``register_means``: per block, (1, d),
    the mean register state *after* that block.  For regression ``y_mean``/``y_std`` undo the target
    standardization; ``n_classes`` is the number of logits kept for classification.  ``block_inputs``: per
    block, the context tokens (1, K + n_support, d) that entered it, in float16 (``_stored``), kept only when asked
    (``keep_inputs``): they are what a saved model stores, a quarter of the size of the float32 keys and values
    they give back (``TabSwiftEngine.restore_context``).
    """

    task: str
    keys: List[torch.Tensor]
    values: List[torch.Tensor]
    register_means: List[torch.Tensor]
    n_features: int
    n_support: int
    n_classes: Optional[int] = None
    y_mean: float = 0.0
    y_std: float = 1.0
    block_inputs: Optional[List[torch.Tensor]] = None

    def to(self, device) -> "ContextCache":
        move = lambda ts: None if ts is None else [t.to(device) for t in ts]  # noqa: E731
        return replace(self, keys=move(self.keys), values=move(self.values),
                       register_means=move(self.register_means), block_inputs=move(self.block_inputs))

    @property
    def nbytes(self) -> int:
        tensors = (*self.keys, *self.values, *self.register_means, *(self.block_inputs or ()))
        return sum(t.numel() * t.element_size() for t in tensors)


@dataclass
class EnginePrediction:
    """``predictions``: (Q, n_classes) logits, or (Q,) regression values in the units of y_support.
    ``exit_layer``: (Q,) number of blocks each query went through (1..L).
    ``rows_per_layer``: how many query rows each block processed in this call."""

    predictions: torch.Tensor
    exit_layer: torch.Tensor
    rows_per_layer: List[int]


class TabSwiftEngine:
    """Cached inference for one table at a time (an ensemble member is one table and one cache).

    ``chunk_size`` bounds the rows whose attention is computed at once, i.e. memory
    O(chunk_size x (K + n_support)) per head, both when encoding the context and when predicting.
    """

    def __init__(self, network: TabSwiftNetwork, chunk_size: int = 1024):
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        self.net = network
        self.chunk_size = int(chunk_size)

    def _tensor(self, a, dtype=None) -> torch.Tensor:
        p = self.net.registers
        return torch.as_tensor(a).to(device=p.device, dtype=dtype or p.dtype)

    @torch.no_grad()
    def encode_context(self, x_support, y_support, task: str, n_classes: Optional[int] = None,
                       keep_inputs: bool = False) -> ContextCache:
        """Run registers + support through all blocks once; return the per-block K/V cache.

        x_support (n, F) numeric and preprocessed; y_support (n,) class ids 0..C-1 or raw regression
        targets, which are standardized here with the context's mean/std (and un-standardized by
        ``predict``).  ``n_classes`` defaults to max(y) + 1.  ``keep_inputs`` also keeps each block's input
        tokens (``ContextCache.block_inputs``), for a model that saves its caches.
        """
        check_task(task)
        x = self._tensor(x_support)
        if x.dim() != 2 or x.shape[0] == 0:
            raise ValueError(f"x_support must be a non-empty (rows, features) array, got {tuple(x.shape)}")
        y = torch.as_tensor(y_support).to(x.device)
        if y.shape != x.shape[:1]:
            raise ValueError(f"y_support has shape {tuple(y.shape)}, expected ({x.shape[0]},)")
        y_mean, y_std = 0.0, 1.0
        if task == CLASSIFICATION:
            present = int(y.max()) + 1
            n_classes = present if n_classes is None else int(n_classes)
            if n_classes < present:
                raise ValueError(f"n_classes={n_classes} but y_support contains class id {present - 1}")
            if not 1 <= n_classes <= self.net.config.max_classes:
                raise ValueError(f"n_classes={n_classes} outside [1, C_max={self.net.config.max_classes}]")
        else:
            y_mean, y_std = target_scale(y)
            y = ((y.double() - y_mean) / y_std).to(x.dtype)
            n_classes = None

        h = self.net.context_tokens(x.unsqueeze(0), y.unsqueeze(0), task)
        keys, values, reg_means, inputs = [], [], [], []
        for block in self.net.blocks:
            if keep_inputs:
                inputs.append(_stored(h))
            k, v = block.context_kv(h)
            h = torch.cat([block.mix(h[:, s:s + self.chunk_size], k, v)
                           for s in range(0, h.shape[1], self.chunk_size)], dim=1)
            keys.append(k)
            values.append(v)
            reg_means.append(self.net.register_mean(h))
        return ContextCache(task=task, keys=keys, values=values, register_means=reg_means,
                            n_features=x.shape[1], n_support=x.shape[0], n_classes=n_classes,
                            y_mean=y_mean, y_std=y_std, block_inputs=inputs if keep_inputs else None)

    @torch.no_grad()
    def restore_context(self, cache: ContextCache) -> ContextCache:
        """The keys and values of a cache known by its ``block_inputs`` (a saved cache): each block's K/V
        projection of its input tokens, the only step of ``encode_context`` that feeds the cache (the
        attention over the context, nearly all of its cost, is not repeated).  Inputs stored in a lower
        precision are widened to the network's dtype first."""
        if cache.block_inputs is None or len(cache.block_inputs) != len(self.net.blocks):
            raise ValueError(f"a cache to restore needs the input tokens of each of the {len(self.net.blocks)} "
                             f"blocks")
        dtype = self.net.registers.dtype
        kv = [block.context_kv(self._tensor(h, dtype)) for block, h in zip(self.net.blocks, cache.block_inputs)]
        return replace(cache, keys=[k for k, _ in kv], values=[v for _, v in kv],
                       register_means=[self._tensor(r, dtype) for r in cache.register_means])

    @torch.no_grad()
    def predict(self, x_query, cache: ContextCache, tau: Optional[float] = None) -> EnginePrediction:
        """Predict queries (Q, F) against ``cache``; ``tau=None`` disables early exit."""
        net, L = self.net, len(self.net.blocks)
        if len(cache.keys) != L:
            raise ValueError(f"cache has {len(cache.keys)} layers, network has {L}")
        if tau is not None and net.n_exit_layers == 0:
            raise ValueError("early exit requested but the network was built with early_exit=False")
        if tau is not None and getattr(net, "exit_heads_stale", False):
            raise ValueError("early exit requested but the exit heads were not trained on this network's "
                             "backbone (it was fine-tuned, or the heads were just added, without retraining them)")
        x = self._tensor(x_query)
        if x.dim() != 2 or x.shape[1] != cache.n_features:
            raise ValueError(f"x_query must be (rows, {cache.n_features}), got {tuple(x.shape)}")
        Q, task = x.shape[0], cache.task
        width = net.config.max_classes if task == CLASSIFICATION else None
        out = x.new_zeros((Q, width) if width else (Q,))
        exit_layer = torch.full((Q,), L, dtype=torch.long, device=x.device)
        rows = [0] * L
        n_exit = net.n_exit_layers if tau is not None else 0

        for s in range(0, Q, self.chunk_size):
            idx = torch.arange(s, min(s + self.chunk_size, Q), device=x.device)
            h = net.embed_rows(x[idx].unsqueeze(0))  # queries carry no label embedding
            for e, block in enumerate(net.blocks):
                h = block.mix(h, cache.keys[e], cache.values[e])
                rows[e] += h.shape[1]
                if e < n_exit:
                    done = torch.sigmoid(net.exit_heads[e](h, cache.register_means[e], task))[0] >= tau
                    if bool(done.any()):
                        out[idx[done]] = net.layer_heads[e](h[:, done], task)[0].to(out.dtype)
                        exit_layer[idx[done]] = e + 1
                        h, idx = h[:, ~done], idx[~done]
                        if idx.numel() == 0:
                            break
            if idx.numel():
                out[idx] = net.head(h, task)[0].to(out.dtype)  # bf16 under CUDA autocast

        if task == CLASSIFICATION:
            out = out[:, :cache.n_classes]
        else:
            out = out * cache.y_std + cache.y_mean
        return EnginePrediction(predictions=out, exit_layer=exit_layer, rows_per_layer=rows)


__all__ = ["ContextCache", "EnginePrediction", "TabSwiftEngine", "CLASSIFICATION", "REGRESSION"]
