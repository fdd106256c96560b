"""TabSwift's torch network (the TabSwift paper; the released layout, checked against the authors' code).

One token per row: the (already numeric, normalized, <= F_max wide) row is zero-padded to F_max,
rescaled by F_max / F and mapped to d by one linear layer.  Support rows get a label embedding added
(separate encoders for class ids and standardized regression targets); queries get nothing, so a
query token carries no information about its own label.  K learnable registers are prepended; there is
no positional encoding, because row order means nothing in a table.

Split attention: registers + support (the *context*, C = K + n_support tokens) attend to the context;
every query attends to the context only -- never to another query and never to itself.  Nothing in
the context ever reads a query, so the context's per-layer keys/values do not depend on the queries
and can be computed once and cached (``engine.py``); queries can then be pushed in any batching, layer
by layer, and stopped early.

Two equivalent implementations of a block are kept on purpose: ``forward`` runs the whole sequence in
one pass with the split mask (the uncached reference, and the training path), ``context_kv`` + ``mix``
is what the cached engine runs.  Tests check they agree.

The module knows nothing about AutoGluon or preprocessing: tensors in, tensors out.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import List, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from .config import RELEASED, TabSwiftConfig

CLASSIFICATION = "classification"
REGRESSION = "regression"
TASKS = (CLASSIFICATION, REGRESSION)


def check_task(task: str) -> str:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    return task


def mlp(d_in: int, hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, d_out))


class RowEmbedding(nn.Module):
    """e(x) = W · (pad(x, F_max) · F_max / F) + b.

    The rescaling (TabPFN v1) keeps the input's squared norm comparable between narrow and wide tables
    once the missing features are zeros.  ``n_features`` is the true feature count when a batch of
    tables was padded to a common width (pretraining): one count per table, so each table is rescaled
    by its own F rather than by the batch's width (as the authors' code does).
    """

    def __init__(self, max_features: int, d: int):
        super().__init__()
        self.max_features = max_features
        self.proj = nn.Linear(max_features, d)

    def forward(self, x: torch.Tensor, n_features: Union[None, int, torch.Tensor] = None) -> torch.Tensor:
        width = x.shape[-1]
        if width > self.max_features:
            raise ValueError(f"TabSwift takes at most F_max={self.max_features} features, got {width}; "
                             "reduce the dimension (PCA) in preprocessing first")
        if n_features is None:
            n_features = width
        if isinstance(n_features, torch.Tensor):
            if (n_features < 1).any() or (n_features > width).any():
                raise ValueError(f"n_features must lie in [1, {width}], got {n_features.tolist()}")
            scale = (self.max_features / n_features.to(x.dtype)).reshape(*n_features.shape, 1, 1)
        else:
            if not 1 <= n_features <= width:
                raise ValueError(f"TabSwift needs between 1 and {width} features, got n_features={n_features}")
            scale = self.max_features / n_features
        return self.proj(F.pad(x, (0, self.max_features - width)) * scale)


class LabelEncoders(nn.Module):
    """Class ids -> an embedding table of C_max rows; standardized targets -> Linear(1, d).

    A lookup table by default (``encoding="embedding"``) because class ids are nominal: a linear map
    of the id would make class 3 "between" classes 2 and 4.  ``encoding="scalar"`` is the released
    checkpoint's Linear(1, d) on the id as a float, kept so converted released weights compute what
    they were trained to compute.
    """

    def __init__(self, max_classes: int, d: int, encoding: str = "embedding"):
        super().__init__()
        self.max_classes = max_classes
        self.encoding = encoding
        self.classes = nn.Embedding(max_classes, d) if encoding == "embedding" else nn.Linear(1, d)
        self.target = nn.Linear(1, d)

    def forward(self, y: torch.Tensor, task: str) -> torch.Tensor:
        if check_task(task) == CLASSIFICATION:
            y_int = y.long()
            if y.is_floating_point() and not torch.equal(y_int.to(y.dtype), y):
                raise ValueError("classification labels must be integer class ids")
            if y_int.numel() and (y_int.min() < 0 or y_int.max() >= self.max_classes):
                raise ValueError(f"class ids must lie in [0, {self.max_classes}); more classes than C_max "
                                 "need hierarchical grouping in the caller")
            if self.encoding == "scalar":
                return self.classes(y_int.unsqueeze(-1).to(self.classes.weight.dtype))
            return self.classes(y_int)
        return self.target(y.unsqueeze(-1).to(self.target.weight.dtype))


class GatedSplitAttentionBlock(nn.Module):
    """Pre-norm block with element-wise gated (G1) split attention and a GELU MLP.

    With z = LN1(x), per head h:  O_h = softmax(Q_h K_hᵀ / √d_h) V_h  over the context keys only, and

        Õ_h = O_h ⊙ sigmoid(z W_g^h + b_g^h)          (G1, Qiu et al. 2025; one gate per head *and* channel)
        x  <- x + W_o · concat_h(Õ_h) + b_o
        x  <- x + W_2 · GELU(W_1 · LN2(x) + b_1) + b_2

    The gate is computed from the same normalized state z that produced the query, so each query
    position gets its own gate.  Q/K/V come from one packed Linear(d, 3d) as in the released model.
    """

    def __init__(self, d: int, n_heads: int, ff_factor: int, eps: float = 1e-5):
        super().__init__()
        self.d, self.h = d, n_heads
        self.norm1 = nn.LayerNorm(d, eps=eps)
        self.qkv = nn.Linear(d, 3 * d)
        self.gate = nn.Linear(d, d)
        self.out = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d, eps=eps)
        self.ffn = mlp(d, ff_factor * d, d)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        """(B, T, d) -> (B, H, T, d_h); channel c of the model belongs to head c // d_h."""
        B, T, _ = t.shape
        return t.view(B, T, self.h, self.d // self.h).transpose(1, 2)

    def gated_attention(self, z: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        attn_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """concat_h(O_h ⊙ sigmoid(z W_g + b_g)), (B, T, d): the attention output before W_o."""
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        B, _, T, _ = o.shape
        return o.transpose(1, 2).reshape(B, T, self.d) * torch.sigmoid(self.gate(z))

    def _residual(self, x: torch.Tensor, gated: torch.Tensor) -> torch.Tensor:
        x = x + self.out(gated)
        return x + self.ffn(self.norm2(x))

    # ---- cached path -------------------------------------------------------------------------
    def context_kv(self, x_ctx: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Keys and values (B, H, C, d_h) of the context tokens, after LN1 and the K/V projections."""
        z = self.norm1(x_ctx)
        k, v = F.linear(z, self.qkv.weight[self.d:], self.qkv.bias[self.d:]).chunk(2, dim=-1)
        return self._heads(k), self._heads(v)

    def mix(self, x: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Update tokens ``x`` (B, T, d) that read the given context keys/values.

        Only the query projection of ``x`` is computed: its own keys are never used.
        """
        z = self.norm1(x)
        q = self._heads(F.linear(z, self.qkv.weight[:self.d], self.qkv.bias[:self.d]))
        return self._residual(x, self.gated_attention(z, q, k, v))

    # ---- one-pass path -----------------------------------------------------------------------
    def forward(self, x: torch.Tensor, n_ctx: int, masked: bool = True) -> torch.Tensor:
        """Whole sequence [context; queries] (B, T, d) in one pass.

        ``masked=True`` uses an explicit (T, T) mask that allows column j only if j < n_ctx (the
        reference); ``masked=False`` slices the keys to the context instead (same result, no T x T work).
        """
        z = self.norm1(x)
        q, k, v = (self._heads(t) for t in self.qkv(z).chunk(3, dim=-1))
        if masked:
            T = x.shape[1]
            allowed = torch.zeros(T, T, dtype=torch.bool, device=x.device)
            allowed[:, :n_ctx] = True
            gated = self.gated_attention(z, q, k, v, attn_mask=allowed)
        else:
            gated = self.gated_attention(z, q, k[:, :, :n_ctx], v[:, :, :n_ctx])
        return self._residual(x, gated)


class PredictionHeads(nn.Module):
    """LN, then a GELU MLP per task: C_max logits (classification) or one scalar (regression).

    The caller slices the logits to the classes present; the scalar is on the standardized scale.
    """

    def __init__(self, d: int, hidden: int, max_classes: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(d, eps=eps)
        self.cls = mlp(d, hidden, max_classes)
        self.reg = mlp(d, hidden, 1)

    def forward(self, h: torch.Tensor, task: str) -> torch.Tensor:
        z = self.norm(h)
        return self.cls(z) if check_task(task) == CLASSIFICATION else self.reg(z).squeeze(-1)


class ExitHeads(nn.Module):
    """Stop logit s = MLP(LN([h_query ; r̄])), r̄ = mean register state of the same layer.

    r̄ summarizes the task, so the decision can depend on how hard the task is, not only on the query.
    One MLP per task type, because "this layer already agrees with the last one" means different
    things for logits and for scalars.
    """

    def __init__(self, d: int, hidden: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(2 * d, eps=eps)
        self.cls = mlp(2 * d, hidden, 1)
        self.reg = mlp(2 * d, hidden, 1)

    def forward(self, h: torch.Tensor, register_mean: torch.Tensor, task: str) -> torch.Tensor:
        """h (B, Q, d), register_mean (B, d) -> logits (B, Q)."""
        r = register_mean.unsqueeze(-2).expand_as(h)
        z = self.norm(torch.cat([h, r], dim=-1))
        return (self.cls if check_task(task) == CLASSIFICATION else self.reg)(z).squeeze(-1)


@dataclass
class TabSwiftOutput:
    """``prediction``: (B, Q, C_max) logits or (B, Q) standardized values (no B for unbatched input).
    ``layer_predictions`` / ``exit_logits``: per exit layer 1..L-1 (only with ``return_layers``).
    ``hidden``: states of the whole sequence after 0..L blocks (only with ``return_hidden``)."""

    prediction: torch.Tensor
    layer_predictions: List[torch.Tensor] = field(default_factory=list)
    exit_logits: List[torch.Tensor] = field(default_factory=list)
    hidden: List[torch.Tensor] = field(default_factory=list)


class TabSwiftNetwork(nn.Module):
    """Row embedding, label encoders, registers, L gated split-attention blocks, heads.

    Early exit: layers 1..L-1 each get prediction heads and exit heads; layer L always uses the
    final heads (exiting at the last layer saves nothing), so a query that never exits ends there.
    """

    def __init__(self, config: TabSwiftConfig = RELEASED):
        super().__init__()
        c = self.config = config
        d = c.d_model
        self.row_embedding = RowEmbedding(c.max_features, d)
        self.label_encoders = LabelEncoders(c.max_classes, d, c.label_encoding)
        self.registers = nn.Parameter(torch.empty(c.n_registers, d))
        nn.init.normal_(self.registers, std=0.02)  # init is not published; small, like other learned tokens
        self.blocks = nn.ModuleList(GatedSplitAttentionBlock(d, c.n_heads, c.ff_factor, c.layer_norm_eps)
                                    for _ in range(c.n_layers))
        self.head = PredictionHeads(d, c.head_hidden_factor * d, c.max_classes, c.layer_norm_eps)
        n_exit = c.n_layers - 1 if c.early_exit else 0
        self.layer_heads, self.exit_heads = self._new_exit_heads(n_exit)
        #: True while the per-layer and exit heads were not trained on the current backbone (fine-tuning
        #: moved it, or the heads were just added): the engine then refuses early exit, and a fit drops
        #: such heads before saving, so heads of another backbone can never decide an exit
        self.exit_heads_stale = False

    def _new_exit_heads(self, n_exit: int) -> Tuple[nn.ModuleList, nn.ModuleList]:
        c, d = self.config, self.config.d_model
        layer_heads = nn.ModuleList(
            PredictionHeads(d, c.hidden(c.layer_head_hidden_factor), c.max_classes, c.layer_norm_eps)
            for _ in range(n_exit))
        exit_heads = nn.ModuleList(ExitHeads(d, c.hidden(c.exit_hidden_factor), c.layer_norm_eps)
                                   for _ in range(n_exit))
        return layer_heads, exit_heads

    @property
    def n_exit_layers(self) -> int:
        return len(self.exit_heads)

    def drop_exit_heads(self) -> None:
        """Remove the per-layer and exit heads (config ``early_exit=False``, so a saved copy is rebuilt
        without them): heads trained on another backbone would read hidden states they never saw."""
        self.config = replace(self.config, early_exit=False)
        self.layer_heads = nn.ModuleList()
        self.exit_heads = nn.ModuleList()
        self.exit_heads_stale = False

    def add_exit_heads(self) -> None:
        """Give a network without early exit (e.g. the authors' released weights) freshly initialized
        per-layer and exit heads, on its device.  They are marked stale until trained on this backbone
        (``exit_heads.retrain_exit_heads``): untrained heads must not decide exits."""
        if self.n_exit_layers:
            raise ValueError("the network already has exit heads")
        self.config = replace(self.config, early_exit=True)
        layer_heads, exit_heads = self._new_exit_heads(self.config.n_layers - 1)
        self.layer_heads = layer_heads.to(self.registers.device)
        self.exit_heads = exit_heads.to(self.registers.device)
        self.exit_heads_stale = self.n_exit_layers > 0

    # ---- tokens -----------------------------------------------------------------------------
    def embed_rows(self, x: torch.Tensor, n_features=None) -> torch.Tensor:
        return self.row_embedding(x.to(self.registers.dtype), n_features)

    def embed_support(self, x: torch.Tensor, y: torch.Tensor, task: str, n_features=None) -> torch.Tensor:
        """h_i = e(x_i) + e_y(y_i): only support rows ever receive a label embedding."""
        return self.embed_rows(x, n_features) + self.label_encoders(y, task)

    def context_tokens(self, x: torch.Tensor, y: torch.Tensor, task: str, n_features=None) -> torch.Tensor:
        """[registers; support] (B, K + n_support, d) for batched x (B, n, F) and y (B, n)."""
        support = self.embed_support(x, y, task, n_features)
        regs = self.registers.unsqueeze(0).expand(support.shape[0], -1, -1)
        return torch.cat([regs, support], dim=1)

    def register_mean(self, h_ctx: torch.Tensor) -> torch.Tensor:
        """Mean register state (B, d); zeros when the config has no registers."""
        K = self.config.n_registers
        return h_ctx[:, :K].mean(1) if K else h_ctx.new_zeros(h_ctx.shape[0], h_ctx.shape[-1])

    # ---- uncached forward -------------------------------------------------------------------
    def forward(self, x_support: torch.Tensor, y_support: torch.Tensor, x_query: torch.Tensor, task: str,
                n_features=None, masked: bool = True, return_layers: bool = False,
                return_hidden: bool = False) -> TabSwiftOutput:
        """Registers + support + queries in one pass (training, and the reference for the cache).

        Shapes: x_support (B, n, F) or (n, F); y_support (B, n) or (n,) (class ids, or standardized
        targets); x_query (B, q, F) or (q, F).  ``n_features``: see ``RowEmbedding``.
        """
        check_task(task)
        unbatched = x_support.dim() == 2
        if unbatched:
            x_support, y_support, x_query = x_support.unsqueeze(0), y_support.unsqueeze(0), x_query.unsqueeze(0)
        if y_support.shape != x_support.shape[:2] or x_query.shape[0] != x_support.shape[0] \
                or x_query.shape[-1] != x_support.shape[-1]:
            raise ValueError(f"shape mismatch: x_support {tuple(x_support.shape)}, y_support "
                             f"{tuple(y_support.shape)}, x_query {tuple(x_query.shape)}")
        ctx = self.context_tokens(x_support, y_support, task, n_features)
        n_ctx = ctx.shape[1]
        if n_ctx == 0:
            raise ValueError("TabSwift needs at least one support row or register to attend to")
        h = torch.cat([ctx, self.embed_rows(x_query, n_features)], dim=1)
        out = TabSwiftOutput(prediction=h.new_zeros(0))
        if return_hidden:
            out.hidden.append(h)
        for e, block in enumerate(self.blocks):
            h = block(h, n_ctx, masked=masked)
            if return_hidden:
                out.hidden.append(h)
            if return_layers and e < self.n_exit_layers:
                hq = h[:, n_ctx:]
                out.layer_predictions.append(self.layer_heads[e](hq, task))
                out.exit_logits.append(self.exit_heads[e](hq, self.register_mean(h[:, :n_ctx]), task))
        out.prediction = self.head(h[:, n_ctx:], task)
        if unbatched:
            out.prediction = out.prediction[0]
            out.layer_predictions = [t[0] for t in out.layer_predictions]
            out.exit_logits = [t[0] for t in out.exit_logits]
            out.hidden = [t[0] for t in out.hidden]
        return out
