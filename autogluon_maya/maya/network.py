"""MAYA's torch network (MAYA paper, sections 3.2-3.5): feature tokenizer + [CLS] -> multi-branch-attention
(MBA) blocks -> mean of the blocks' [CLS] states (encoder); inter-instance attention (IAIL) blocks that read the
label embeddings of context rows (decoder); a linear predictor, shared by the output and the branch-weight probes.
Tensors in, tensors out: tested against the paper's formulas in ``plugin_tests/maya/test_network.py``."""

from __future__ import annotations

import contextlib
import math
import threading
from typing import List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn


_local = threading.local()


@contextlib.contextmanager
def dropout_generator(generator: Optional[torch.Generator]):
    """Draw the calling thread's CPU dropout masks from ``generator`` for the duration: members trained in
    parallel threads would otherwise draw from torch's global generator in an order set by the thread scheduling,
    and one seed would not train one network."""
    previous = getattr(_local, "generator", None)
    _local.generator = generator
    try:
        yield
    finally:
        _local.generator = previous


def byte_dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Dropout whose CPU mask comes from random bytes (8 per 64-bit draw), the rate quantized to 1/256.
    On CPU, ``F.dropout`` samples a Bernoulli variable per element, a large share of a small network's step; one
    random byte per element is cheaper (docs/maya.md gives the measurements).  On GPU torch's kernel is used.
    Masks come from the thread's ``dropout_generator``."""
    if not training or p <= 0:
        return x
    cut = int(round(p * 256))
    generator = None if x.is_cuda else getattr(_local, "generator", None)
    if x.is_cuda or cut < 1 or cut > 255 or p >= 1:  # rates the 1/256 grid cannot express
        if generator is None or p >= 1:
            return F.dropout(x, p, True)
        keep = torch.rand(x.shape, generator=generator, device=x.device) >= p
        return x * keep.to(x.dtype).mul_(1.0 / (1.0 - p))
    n = x.numel()
    draws = torch.randint(-(2**63), 2**63 - 1, ((n + 7) // 8,), dtype=torch.int64, device=x.device,
                          generator=generator)
    keep = draws.view(torch.uint8)[:n].view(x.shape) >= cut
    # one multiply by a scaled float mask: x * keep * scale would be two passes forward and two backward
    return x * keep.to(x.dtype).mul_(256.0 / (256 - cut))


class Dropout(nn.Module):
    """``nn.Dropout`` with ``byte_dropout``'s cheaper mask."""

    def __init__(self, p: float = 0.0):
        super().__init__()
        self.p = float(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return byte_dropout(x, self.p, self.training)


class ReGLU(nn.Module):
    """Feed-forward with a ReLU-gated linear unit: W_o (relu(x W_a) * (x W_b))."""

    def __init__(self, d: int, hidden: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        self.proj_in = nn.Linear(d, 2 * hidden, bias=bias)
        self.proj_out = nn.Linear(hidden, d, bias=bias)
        self.dropout = Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.proj_in(x).chunk(2, dim=-1)
        return self.proj_out(self.dropout(F.relu(a) * b))


# Piecewise-linear embeddings: quantile bins per numeric feature, at most this many (the library's default, and
# the embeddings paper's usual count); fewer where a feature has fewer distinct quantiles or the table fewer rows.
PIECEWISE_BINS = 48


def training_bins(x_num: torch.Tensor, n_bins: int = PIECEWISE_BINS) -> List[torch.Tensor]:
    """Quantile bin edges per column of ``x_num``, the training rows only (Gorishniy et al. 2022, section 3.2.1;
    ``rtdl_num_embeddings.compute_bins``).  Validation and test rows never set a bin: a feature's encoding is
    then a function of the training distribution alone, like every other fitted preprocessing step.

    ``compute_bins`` refuses a column with a single value and needs more rows than bins; such a column (a
    constant feature, a missing indicator that is always 1) gets the one bin [v, v + 1], on which its token is
    constant as its linear token would be; with fewer than 3 rows a column's one bin spans its range.  Columns
    go to ``compute_bins`` in groups of at most 2**24 values, the size ``torch.quantile`` accepts."""
    import warnings

    from rtdl_num_embeddings import compute_bins

    x = x_num.detach().float().cpu()
    n, f = x.shape
    lo, hi = x.min(0).values if n else torch.zeros(f), x.max(0).values if n else torch.zeros(f)
    varying = (hi > lo).nonzero().flatten().tolist() if n else []
    bins: List[torch.Tensor] = [torch.stack([lo[j], lo[j] + 1]) for j in range(f)]
    if n >= 3 and varying:
        group = max(1, (1 << 24) // n)
        with warnings.catch_warnings():  # a 0/1 column has two edges: the library warns that it is one bin
            warnings.simplefilter("ignore", UserWarning)
            for start in range(0, len(varying), group):
                cols = varying[start:start + group]
                for j, edges in zip(cols, compute_bins(x[:, cols], n_bins=max(2, min(n_bins, n - 1)))):
                    bins[j] = edges
    else:
        for j in varying:
            bins[j] = torch.stack([lo[j], hi[j]])
    return bins


class FeatureTokenizer(nn.Module):
    """Numerical feature j -> (s x_j) W_j + b_j; categorical feature -> its code's embedding + b_j (Eq. 1);
    a learned [CLS] token prepended.  Categorical code 0 is reserved for missing/unseen values.

    ``num_scale`` (s, 1 in the paper): under Adam a weight moves by about the learning rate per step whatever its
    gradient, so a numeric token moves by about s |x| lr: the inputs' scale sets how fast the tokenizer learns, and
    min-max inputs in [-1, 1] learn far more slowly than quantile-normal ones (docs/maya.md, ``numeric_scale``).

    ``num_embeddings`` replaces the linear numeric token by an embedding of Gorishniy et al., "On Embeddings for
    Numerical Features in Tabular Deep Learning" (NeurIPS 2022), from their package ``rtdl_num_embeddings``; each
    numeric feature still becomes one ``d``-wide token, so the encoder and decoder are unchanged, and categorical
    tokens and [CLS] are as above.  The embedding reads s x_j, as the linear token does.
    - "periodic": PLR, ReLU(Linear_j([cos(2 pi c_j s x_j), sin(2 pi c_j s x_j)])) with 48 frequencies c_j per
      feature (section 3.3); ``lite=False``, a linear map of its own per feature, as in TabM's best variant
      (the shared "lite" map was introduced for TabR to save parameters, at some cost in accuracy).
    - "piecewise": the piecewise-linear encoding of s x_j on ``num_bins`` (section 3.2, ``training_bins``) through
      a linear map per feature, ``version="B"``: the preset introduced with TabM and used by it (the library
      warns when no version is given and falls back to the older "A" only for backward compatibility); a linear
      token plus a piecewise-linear part initialised at zero, so training starts from the paper's token.
      ``activation=False``: the library's suggested start for a PLE embedding; the encoder's attention and FFN
      provide the non-linearity.
    The embeddings carry their own biases (the library has no switch for them); ``if_bias`` applies to the
    categorical tokens and the rest of the network."""

    num_scale = 1.0  # class default: networks pickled before the setting existed multiply by 1
    num_embeddings = None  # class default: networks pickled before the setting existed have the linear token

    def __init__(self, n_num: int, cat_cardinalities: Sequence[int], d: int, if_bias: bool = True,
                 add_act: bool = False, act_type: str = "relu", num_scale: float = 1.0,
                 num_embeddings: Optional[str] = None, num_bins: Optional[Sequence[torch.Tensor]] = None):
        super().__init__()
        if n_num + len(cat_cardinalities) == 0:
            raise ValueError("MAYA needs at least one feature")
        self.n_num = n_num
        self.num_scale = float(num_scale)
        self.num_embeddings = num_embeddings if n_num else None
        linear = self.num_embeddings is None
        self.num_weight = nn.Parameter(torch.empty(n_num, d)) if (n_num and linear) else None
        self.num_bias = nn.Parameter(torch.empty(n_num, d)) if (n_num and linear and if_bias) else None
        self.cat_embeddings = nn.ModuleList(nn.Embedding(c + 1, d) for c in cat_cardinalities)
        n_cat = len(cat_cardinalities)
        self.cat_bias = nn.Parameter(torch.empty(n_cat, d)) if (n_cat and if_bias) else None
        self.cls = nn.Parameter(torch.empty(1, 1, d))
        self.act = (nn.PReLU() if act_type == "prelu" else nn.ReLU()) if add_act else None
        self._reset(d, add_act)
        # built after _reset: the library's modules initialise themselves as their paper does
        self.num_embedding = self._numeric_embedding(n_num, d, num_bins)

    def _numeric_embedding(self, n_num: int, d: int, num_bins) -> Optional[nn.Module]:
        import warnings

        from rtdl_num_embeddings import PeriodicEmbeddings, PiecewiseLinearEmbeddings

        if self.num_embeddings is None:
            return None
        if self.num_embeddings == "periodic":
            return PeriodicEmbeddings(n_num, d, lite=False)
        if self.num_embeddings != "piecewise":
            raise ValueError(f"num_embeddings must be None, 'periodic' or 'piecewise', got {self.num_embeddings!r}")
        if num_bins is None or len(num_bins) != n_num:
            raise ValueError(f"num_embeddings='piecewise' needs the training rows' bin edges of each of the "
                             f"{n_num} numeric features (training_bins), got "
                             f"{'none' if num_bins is None else len(num_bins)}")
        bins = [torch.as_tensor(b, dtype=torch.float32).cpu() for b in num_bins]
        # the edges themselves, kept with the weights (saved, moved and loaded with them): padded with NaN
        edges = torch.full((n_num, max(len(b) for b in bins)), float("nan"))
        for j, b in enumerate(bins):
            edges[j, :len(b)] = b
        self.register_buffer("bin_edges", edges)
        with warnings.catch_warnings():  # a 0/1 column has one bin, which the library warns about
            warnings.simplefilter("ignore", UserWarning)
            return PiecewiseLinearEmbeddings(bins, d, activation=False, version="B")

    def bins(self) -> List[torch.Tensor]:
        """The piecewise embedding's bin edges per numeric feature (as ``training_bins`` gave them)."""
        edges = getattr(self, "bin_edges", None)
        if edges is None:
            return []
        return [row[~torch.isnan(row)] for row in edges]

    def _reset(self, d: int, add_act: bool):
        bound = 1 / math.sqrt(d)
        for p in (self.num_weight, self.num_bias, self.cat_bias, self.cls):
            if p is not None:
                if add_act:  # Kaiming init suits the rectifier that follows
                    nn.init.kaiming_uniform_(p, a=math.sqrt(5))
                else:
                    nn.init.uniform_(p, -bound, bound)
        for emb in self.cat_embeddings:
            nn.init.uniform_(emb.weight, -bound, bound)

    def numeric_tokens(self, x_num: torch.Tensor) -> torch.Tensor:
        """(B, n_num) -> (B, n_num, d): the numeric features' tokens."""
        embedding = self._modules.get("num_embedding")
        if embedding is not None:
            return embedding(x_num if self.num_scale == 1.0 else x_num * self.num_scale)
        # the scale folded into the (n_num, d) weight: one small multiply instead of one per row
        w = self.num_weight if self.num_scale == 1.0 else self.num_weight * self.num_scale
        t = x_num.unsqueeze(-1) * w
        return t + self.num_bias if self.num_bias is not None else t

    def forward(self, x_num: torch.Tensor, x_cat: torch.Tensor) -> torch.Tensor:
        tokens = []
        if self.n_num:
            tokens.append(self.numeric_tokens(x_num))
        if len(self.cat_embeddings):
            t = torch.stack([emb(x_cat[:, i]) for i, emb in enumerate(self.cat_embeddings)], dim=1)
            tokens.append(t + self.cat_bias if self.cat_bias is not None else t)
        x = torch.cat(tokens, dim=1)
        if self.act is not None:
            x = self.act(x)
        return torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)


def folded_single_query_attention(z: torch.Tensor, q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor,
                                  b_v: Optional[torch.Tensor]) -> torch.Tensor:
    """Attention of one query row per (row, head) over every token, without projecting the tokens.
    z (B, T, d); q (B, H, hd), or (1, H, hd): one query for every row; w_k / w_v (H * hd, d); returns (B, H, hd).

    Exact: q . (W_k z_t + b_k) = (W_k^T q) . z_t + q . b_k, whose last term is the same for every token and so
    ignored by the softmax; and sum_t p_t (W_v z_t + b_v) = W_v (sum_t p_t z_t) + b_v.  Projecting every token
    costs B T d (2 H hd) multiply-adds, this B H d (2 T + 2 hd): ~8x fewer at the default size."""
    B, T, d = z.shape
    H, hd = q.shape[1], q.shape[2]
    # per head: W_k,h^T q_h, a d-vector that scores every token by one dot product
    q_tok = torch.bmm(q.transpose(0, 1), w_k.view(H, hd, d)).transpose(0, 1) * (hd ** -0.5)  # (B or 1, H, d)
    if q.shape[0] == 1 and B > 1:  # one query for all rows: every token scored by a single matmul
        p = torch.softmax((z.reshape(B * T, d) @ q_tok[0].T).view(B, T, H), dim=1).transpose(1, 2)
    else:
        p = torch.softmax(torch.bmm(q_tok, z.transpose(1, 2)), dim=-1)  # (B, H, T)
    z_read = torch.bmm(p, z)  # (B, H, d): the attention-weighted tokens
    out = torch.bmm(z_read.transpose(0, 1), w_v.view(H, hd, d).transpose(1, 2)).transpose(0, 1)  # (B, H, hd)
    return out if b_v is None else out + b_v.view(H, hd)


class MBABlock(nn.Module):
    """Multi-branch attention block (Eqs. 7, 10): out = LN( sum_j w_j LN_j(FFN(Attn_j(z) + z)) + z ).

    All branches' Q/K/V come from one matmul and run as one attention call of ``num_branch * num_heads`` heads;
    the shared FFN runs once over the stacked branches.  ``branch_weights`` (a buffer) is set during training
    (``MayaNetwork.update_branch_weights``) and used as stored at inference."""

    def __init__(self, d: int, num_heads: int, num_branch: int, intermediate_factor: float,
                 dropout: float = 0.0, bias: bool = True, use_branch_weights: bool = True):
        super().__init__()
        if d % num_heads:
            raise ValueError(f"hidden_size={d} must be a multiple of num_heads={num_heads}")
        self.d, self.h, self.n = d, num_heads, num_branch
        self.qkv = nn.Linear(d, 3 * d * num_branch, bias=bias)
        self.out_weight = nn.Parameter(torch.empty(num_branch, d, d))
        self.out_bias = nn.Parameter(torch.zeros(num_branch, d)) if bias else None
        nn.init.xavier_uniform_(self.out_weight.view(num_branch * d, d))
        self.attn_dropout = dropout
        self.ffn = ReGLU(d, max(1, int(round(intermediate_factor * d))), dropout, bias)
        self.branch_norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(num_branch))
        self.out_norm = nn.LayerNorm(d)
        self.use_branch_weights = use_branch_weights
        self.register_buffer("branch_weights", torch.full((num_branch,), 1.0 / num_branch))

    def branch_outputs(self, z: torch.Tensor, cls_only: bool = False, z0: Optional[torch.Tensor] = None
                       ) -> torch.Tensor:
        """(B, T, d) -> (n_branch, B, T', d): every Branch_j(z); T' = 1 with ``cls_only``, which computes the
        [CLS] row alone (all the last block delivers: later steps are row-wise), ``z0`` its [CLS] rows.  Dropout acts on
        the attention output, not the probabilities: torch's fused CPU attention takes none (unfused: 2.5-4x slower)."""
        B, T, d = z.shape
        hd = d // self.h
        nh = self.n * self.h
        if cls_only:  # the [CLS] row's query alone, its key/value projections folded into it
            w, b, nq = self.qkv.weight, self.qkv.bias, nh * hd  # rows: queries, keys, values
            q = F.linear(z0[:, 0], w[:nq], None if b is None else b[:nq]).view(-1, nh, hd)
            a = folded_single_query_attention(z, q, w[nq:2 * nq], w[2 * nq:],
                                              None if b is None else b[2 * nq:]).unsqueeze(2)  # (B, nh, 1, hd)
            Tq = 1
        else:
            # unbind, not qkv[0..2]: indexing's backward zero-fills a full-size gradient per index
            q, k, v = self.qkv(z).view(B, T, 3, nh, hd).permute(2, 0, 3, 1, 4).unbind(0)
            a = F.scaled_dot_product_attention(q, k, v)
            Tq = T
        a = a.view(B, self.n, self.h, Tq, hd).permute(1, 0, 3, 2, 4).reshape(self.n, B * Tq, d)
        if self.training and self.attn_dropout > 0:
            a = byte_dropout(a, self.attn_dropout, True)
        a = torch.bmm(a, self.out_weight)  # per-branch output projection
        if self.out_bias is not None:
            a = a + self.out_bias.unsqueeze(1)
        a = a.view(self.n, B, Tq, d) + (z0 if cls_only else z).unsqueeze(0)
        f = self.ffn(a)
        # the per-branch LayerNorms LN_j as one normalization plus each branch's affine, broadcast
        weight = torch.stack([norm.weight for norm in self.branch_norms]).view(self.n, 1, 1, d)
        bias = torch.stack([norm.bias for norm in self.branch_norms]).view(self.n, 1, 1, d)
        eps = self.branch_norms[0].eps
        return torch.addcmul(bias, F.layer_norm(f, (d,), eps=eps), weight)

    def combine(self, z: torch.Tensor, branches: torch.Tensor) -> torch.Tensor:
        w = self.branch_weights if self.use_branch_weights else torch.full_like(self.branch_weights, 1 / self.n)
        return self.out_norm(torch.einsum("n,nbtd->btd", w.to(branches.dtype), branches) + z)

    def forward(self, z: torch.Tensor, cls_only: bool = False, z0: Optional[torch.Tensor] = None
                ) -> Tuple[torch.Tensor, torch.Tensor]:
        """The block output (only its [CLS] row with ``cls_only``) and the per-branch [CLS] states (n_branch, B, d).
        ``z0``: the [CLS] rows, (B, 1, d), or (1, 1, d) for the first block's learned token; passed in rather than
        sliced from ``z``, whose slices' backward would zero-fill gradients the size of ``z``."""
        if cls_only:
            z0 = z[:, :1] if z0 is None else z0
            branches = self.branch_outputs(z, True, z0)
            return self.combine(z0, branches), branches[:, :, 0]
        branches = self.branch_outputs(z)
        return self.combine(z, branches), branches[:, :, 0]


class IAILBlock(nn.Module):
    """Inter-instance attention: a query row attends to context rows by -||x W_q - c W_k||^2 and
    reads their label embeddings; then residual + LN, FFN, residual + LN.  Single head, as in the paper.
    """

    def __init__(self, d: int, intermediate_factor: float, act_type: str, dropout: float, bias: bool,
                 qk_shared_weights: bool):
        super().__init__()
        self.q_proj = nn.Linear(d, d, bias=bias)
        self.k_proj = self.q_proj if qk_shared_weights else nn.Linear(d, d, bias=bias)
        self.norm1 = nn.LayerNorm(d)
        hidden = max(1, int(round(intermediate_factor * d)))  # the activation: Table 12's decoder_act_type
        self.ffn = nn.Sequential(nn.Linear(d, hidden, bias=bias), nn.PReLU() if act_type == "prelu" else nn.ReLU(),
                                 Dropout(dropout), nn.Linear(hidden, d, bias=bias))
        self.norm2 = nn.LayerNorm(d)
        self.dropout = Dropout(dropout)

    def similarity(self, q: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """-||q W_q - k W_k||^2 for every (query, key) pair, from already-projected keys."""
        qp = self.q_proj(q)
        # 2 q.k - |q|^2 - |k|^2, in place on the product: one (queries, keys) block instead of one per operation
        # (the matmul's backward reads its inputs only, so autograd allows it; the same values to the bit as
        # -(|q|^2 - 2 q.k + |k|^2), negation being exact)
        sim = qp @ keys.T
        return sim.mul_(2).sub_(qp.pow(2).sum(-1, keepdim=True)).sub_(keys.pow(2).sum(-1))

    def forward(self, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """``keys`` are projected context encodings (N, d); ``mask`` (Bq, N) is True where a
        query may NOT look (its own row during training)."""
        sim = self.similarity(q, keys)
        if mask is not None:
            sim = sim.masked_fill(mask, float("-inf"))
        weights = torch.softmax(sim, dim=1)
        del sim  # at inference its memory returns before the next block is made
        # a row with nothing to attend to (a 1-row batch) reads zeros instead of NaN; in place where no backward
        # pass needs the softmax's output
        weights = weights.nan_to_num(0.0) if torch.is_grad_enabled() else weights.nan_to_num_(0.0)
        read = weights @ values
        h = self.norm1(q + self.dropout(read))
        return self.norm2(h + self.dropout(self.ffn(h)))


NETWORK_KEYS = ("hidden_size", "num_heads", "num_branch", "num_layers", "intermediate_factor", "dropout", "if_bias",
                "add_act", "act_type", "num_decoder_layers", "decoder_intermediate_factor", "decoder_act_type",
                "decoder_dropout", "decoder_if_bias", "qk_shared_weights", "use_branch_weights", "numeric_scale",
                "num_embeddings")


class MayaNetwork(nn.Module):
    """Encoder, label embedding, IAIL decoder and predictor.  ``out_dim``: classes, 1 (regression) or
    quantile levels; ``label_kind``: "class" (lookup table) or "real" (linear map of a standardized target).
    ``settings``: every one of ``NETWORK_KEYS``, as the caller resolved them (``defaults.resolve_defaults`` and
    the user's values): the network holds no defaults of its own.  ``num_bins``: with
    ``num_embeddings="piecewise"``, the bin edges of each numeric feature, computed on the training rows
    (``training_bins`` of s x, s the ``numeric_scale``)."""

    def __init__(self, n_num: int, cat_cardinalities: Sequence[int], out_dim: int, label_kind: str,
                 num_classes: int = 0, num_bins: Optional[Sequence[torch.Tensor]] = None, **settings):
        super().__init__()
        unknown, missing = sorted(set(settings) - set(NETWORK_KEYS)), [k for k in NETWORK_KEYS if k not in settings]
        if unknown or missing:
            raise TypeError(f"MayaNetwork takes every one of {NETWORK_KEYS}; "
                            f"unknown: {unknown}, missing: {missing}")
        if label_kind not in ("class", "real"):
            raise ValueError(f"label_kind must be 'class' or 'real', got {label_kind!r}")
        c = settings
        d = int(c["hidden_size"])
        self.tokenizer = FeatureTokenizer(n_num, cat_cardinalities, d, c["if_bias"], c["add_act"], c["act_type"],
                                          c["numeric_scale"], c["num_embeddings"], num_bins)
        self.blocks = nn.ModuleList(
            MBABlock(d, int(c["num_heads"]), int(c["num_branch"]), c["intermediate_factor"], c["dropout"],
                     c["if_bias"], c["use_branch_weights"]) for _ in range(int(c["num_layers"])))
        self.encoder_norm = nn.LayerNorm(d)
        self.label_embedding = nn.Embedding(num_classes, d) if label_kind == "class" else nn.Linear(1, d)
        self.label_kind = label_kind
        self.decoder = nn.ModuleList(
            IAILBlock(d, c["decoder_intermediate_factor"], c["decoder_act_type"], c["decoder_dropout"],
                      c["decoder_if_bias"], c["qk_shared_weights"]) for _ in range(int(c["num_decoder_layers"])))
        self.predictor = nn.Linear(d, out_dim)

    # ---- encoder -------------------------------------------------------------------------
    def encode(self, x_num: torch.Tensor, x_cat: torch.Tensor, return_branches: bool = False):
        """Row encodings (B, d) = LN(mean over blocks of each block's [CLS] output) (Eq. 3); with
        ``return_branches`` also each block's per-branch [CLS] states, for ``update_branch_weights``."""
        z = self.tokenizer(x_num, x_cat)
        cls_states: List[torch.Tensor] = []
        branch_cls: List[torch.Tensor] = []
        last = len(self.blocks) - 1
        for i, block in enumerate(self.blocks):
            # nothing reads the last block's feature tokens: compute its [CLS] row only
            # the first block's [CLS] rows are the learned token itself (the tokenizer prepends it)
            z, b = block(z, cls_only=i == last, z0=self.tokenizer.cls if i == 0 else None)
            cls_states.append(z[:, 0])
            branch_cls.append(b)
        enc = self.encoder_norm(torch.stack(cls_states).mean(0))
        return (enc, branch_cls) if return_branches else enc

    # ---- decoder -------------------------------------------------------------------------
    def embed_labels(self, y: torch.Tensor) -> torch.Tensor:
        if self.label_kind == "class":
            return self.label_embedding(y.long())
        return self.label_embedding(y.float().view(-1, 1))

    def project_keys(self, context_enc: torch.Tensor) -> List[torch.Tensor]:
        """Per-IAIL-block key projections of the context: computed once and cached for inference."""
        return [blk.k_proj(context_enc) for blk in self.decoder]

    def decode(self, q_enc: torch.Tensor, keys: Sequence[torch.Tensor], values: torch.Tensor,
               mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        h = q_enc
        for blk, k in zip(self.decoder, keys):
            h = blk(h, k, values, mask=mask)
        return self.predictor(h)

    def forward_train(self, x_num, x_cat, y, return_branches: bool = False):
        """Training forward (Eq. 13): the batch is its own context and each row's own label is masked out."""
        enc, branches = self.encode(x_num, x_cat, return_branches=True)
        eye = torch.eye(enc.shape[0], dtype=torch.bool, device=enc.device)
        out = self.decode(enc, self.project_keys(enc), self.embed_labels(y), mask=eye)
        return (out, branches) if return_branches else out

    @torch.no_grad()
    def update_branch_weights(self, branch_cls: Sequence[torch.Tensor], loss_fn, momentum: float):
        """w <- momentum * w + (1 - momentum) * softmax(s), s_j = loss of the shared predictor on
        branch j's [CLS] state (Eqs. 8-9).  A branch that fits worse gets more weight."""
        for block, b in zip(self.blocks, branch_cls):
            losses = torch.stack([loss_fn(self.predictor(b[j].float())) for j in range(b.shape[0])])
            new = torch.softmax(losses.float(), dim=0)
            block.branch_weights.mul_(momentum).add_((1 - momentum) * new)
