"""Inference-time ensembling around ``TabSwiftEngine`` (the TabSwift paper's inference ensemble).

A *member* is (normalization variant, feature permutation, class shift).  The network has no positional
encoding over features or classes in a learned-invariant way -- its row embedding is a linear map of an
ordered vector and its label table is indexed by class id -- so each member sees the task through a
different, equally valid "view" and their errors partly cancel.  Construction (as TabICL/TabSwift):
the rows of a random Latin square give F distinct feature permutations (each feature visits every
position equally often); (permutation, shift) pairs use distinct permutations while there are enough
and **every class shift equally often** (pair i gets shift ``order[i mod C]``), crossed with the
normalization list and truncated to ``n_estimators``.  All randomness comes from ``random_state``, so
predictions are reproducible.

Why balanced shifts: a network can prefer some class ids outright.  An earlier shipped checkpoint
did so on contexts smaller than any its prior showed it (~25 support rows): with 24 rows of
qsar_biodeg it predicted id 0 for ~70 % of the queries whichever class id 0 stood for, and with shifts
drawn at random 4 pairs of a binary task all got the same shift 1 time in 8 (accuracy 0.47, majority
0.66).  With every shift equally often, a constant preference adds the same amount to every class's
mean logit and the softmax cancels it exactly; the current checkpoint shows no such preference (16
draws of 12 + 12 rows: 0.731 balanced, 0.735 random shifts), so the balance is insurance.

Tables wider than F_max (``wide_features``), measured on spambase's 57 columns + 400 N(0, 1) noise
columns (1,024 context rows, 800 queries, 2 draws; informative columns alone: 0.884 / 0.861):
- ``"select"`` (default): columns screened on the context (``preprocessing.screen_columns``: rank
  F-test, Benjamini-Hochberg 5 %); members see the significant ones -- each its own subset of at most
  F_max when more pass, as TabPFN does with all columns.  0.892 / 0.871.
- ``"subsets"``: each member its own random subset of F_max columns (the first F_max entries of its
  Latin-square row).  0.608 / 0.621 -- each member sees ~12 informative columns in 100, and the
  shipped prior does not ignore 88 noise columns.
- ``"pca"``: F_max principal components.  0.679 / 0.708 -- the noise directions survive the projection.

Classification: a member with shift k feeds labels (y + k) mod C; its output column j then belongs to
original class (j - k) mod C and is rolled back.  Members return log-probabilities; averaging them and
applying softmax(mean / T), T = 0.9, equals averaging raw logits (log_softmax differs from the logits by
a per-row constant, which cancels), and extends unchanged to the hierarchy below.

More than C_max classes: classes are split into <= C_max balanced contiguous groups, recursively.  A
node runs one ICL pass on group ids using only its own support rows; a leaf runs one on its relabelled
classes; log p(class) = sum of log-probabilities along the path (a product of probabilities), so every
class gets a probability and each row sums to 1.

Regression: the engine standardizes the target with the context mean/std and maps its output back,
so members' outputs are already in target units and are simply averaged.  A constant context target is
returned exactly (the engine would add an untrained offset to it).

``pipeline="authors"`` follows the authors' inference code where ours deliberately differs: their
preprocessing (``preprocessing.RowPreprocessor(style="authors")``: outlier clipping, and quantile + PCA
to F_max for wide tables instead of column screening) and their member plan, whose (permutation, shift)
pairs are drawn at random from all pairs, so class shifts are not balanced.  What stays ours: the
regression target is standardized (their wrapper feeds raw y, a defect their own benchmark adapter
works around), and the random draws are our generator's, so members are of the same kind, not the
same.  ``docs/tabswift_vs_authors.md`` measures the two pipelines side by side.

Saved caches: a model loaded from disk would otherwise encode every member's context again on its first
predict call, which is most of that call (attention over the context is ~83 % of encoding time, and
encoding a 3,458-row context took 3x the time of predicting 1,000 queries against it, shipped weights, one
thread).  ``export_caches`` hands each cache's block input tokens to the saved model in float16 (a quarter of the
size of float32 keys and values; float32 where a value is beyond float16's range) and ``import_caches`` turns
them back into keys and values with one projection per block (``TabSwiftEngine.restore_context``).

Context rows above ``max_context_rows`` are subsampled once at fit time (stratified, every class kept,
seeded); attention cost grows with the context, so this is what bounds predict time and memory.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import torch

from autogluon_maya.common.training import autocast

from .engine import ContextCache, TabSwiftEngine
from .network import CLASSIFICATION, REGRESSION, TabSwiftNetwork, check_task
from .preprocessing import NORM_METHODS, RowPreprocessor, screen_columns

logger = logging.getLogger(f"autogluon.ext.{__name__}")
WIDE_FEATURES = ("select", "subsets", "pca")
PIPELINES = ("ours", "authors")


@dataclass(frozen=True)
class Member:
    norm: str
    permutation: Tuple[int, ...]
    shift: int


def latin_permutations(n_features: int, rng: np.random.Generator) -> np.ndarray:
    """(F, F) random Latin square: row i is a permutation, every feature once in every position."""
    base = rng.permutation(n_features)
    square = base[(np.arange(n_features)[:, None] + np.arange(n_features)[None, :]) % n_features]
    return square[rng.permutation(n_features)]


def plan_members(n_estimators: int, n_features: int, n_classes: int, norms: Sequence[str], rng,
                 class_shift: bool = True, feature_shuffle: bool = True,
                 max_features: Optional[int] = None, balanced: bool = True) -> List[Member]:
    """Members = distinct (columns, shift) pairs x ``norms``; shifts balanced (module docstring), or with
    ``balanced=False`` (the authors' plan) the first pairs of a random order of all pairs.

    ``max_features``: a member's "permutation" keeps only its first ``max_features`` columns, so a table
    wider than F_max reaches the network as a different column subset per member."""
    perms = latin_permutations(n_features, rng) if feature_shuffle else np.arange(n_features)[None]
    shifts = rng.permutation(n_classes) if class_shift and n_classes > 1 else np.zeros(1, dtype=int)
    n_perms, n_shifts = len(perms), len(shifts)
    n_pairs = min(math.ceil(n_estimators / len(norms)), n_perms * n_shifts)
    order = rng.permutation(n_perms)
    if balanced:
        # pair i: shift i mod C; permutation i while they last, then each permutation with every shift in turn
        pairs = [(order[i] if n_pairs <= n_perms else order[(i // n_shifts) % n_perms], shifts[i % n_shifts])
                 for i in range(n_pairs)]
    else:
        pairs = [(i // n_shifts, shifts[i % n_shifts]) for i in rng.permutation(n_perms * n_shifts)[:n_pairs]]
    keep = n_features if max_features is None else min(int(max_features), n_features)
    return [Member(norm, tuple(int(j) for j in perms[p][:keep]), int(shift))
            for p, shift in pairs for norm in norms][:n_estimators]


def shift_labels(y: np.ndarray, shift: int, n_classes: int) -> np.ndarray:
    return (np.asarray(y) + shift) % n_classes


def unshift_columns(scores: np.ndarray, shift: int) -> np.ndarray:
    """Column c of the result = column (c + shift) mod C of ``scores`` (inverse of ``shift_labels``)."""
    return np.roll(scores, -shift, axis=1)


def class_groups(n_classes: int, max_classes: int) -> List[Tuple[int, int]]:
    """Balanced contiguous [start, stop) groups, at most ``max_classes`` of them (25, 10 -> 9/8/8)."""
    n_groups = min(max_classes, math.ceil(n_classes / max_classes))
    edges = np.linspace(0, n_classes, n_groups + 1).round().astype(int)
    sizes = np.diff(edges)
    edges = np.concatenate([[0], np.cumsum(np.sort(sizes)[::-1])])  # larger groups first
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def log_softmax(a: np.ndarray) -> np.ndarray:
    a = a - a.max(1, keepdims=True)
    return a - np.log(np.exp(a).sum(1, keepdims=True))


def stratified_subsample(y: np.ndarray, max_rows: int, rng: np.random.Generator,
                         stratify: bool = True) -> np.ndarray:
    """Sorted indices of ``max_rows`` rows; with ``stratify`` every class keeps >= 1 row and the rest
    is shared in proportion to the class counts (largest remainders).  Never fewer rows than classes."""
    n = len(y)
    if not stratify:
        return np.sort(rng.choice(n, size=min(max_rows, n), replace=False))
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    max_rows = min(max(max_rows, len(classes)), n)
    extra = (max_rows - len(classes)) * (counts - 1) / max(n - len(classes), 1)
    quota = 1 + np.floor(extra).astype(int)
    order = np.argsort(-(extra - np.floor(extra)), kind="stable")
    while quota.sum() < max_rows:  # one round suffices in exact arithmetic; loop guards float rounding
        for c in order:
            if quota.sum() < max_rows and quota[c] < counts[c]:
                quota[c] += 1
    chosen = [rng.choice(np.flatnonzero(inverse == c), size=quota[c], replace=False) for c in range(len(classes))]
    return np.sort(np.concatenate(chosen))


def _rows(X, idx):
    return X.iloc[idx].reset_index(drop=True) if isinstance(X, pd.DataFrame) else np.asarray(X)[idx]


@dataclass(frozen=True)
class EnsembleSettings:
    """How a ``TabSwiftEnsemble`` builds and runs its members: how many (each a feature permutation x class shift
    x normalization variant), their preprocessing, the context's size, the softmax temperature, the attention
    chunk, the context caches' memory and the early-exit threshold."""
    n_estimators: int = 8
    norm_methods: Tuple[str, ...] = NORM_METHODS
    class_shift: bool = True
    feature_shuffle: bool = True
    softmax_temperature: float = 0.9
    max_context_rows: int = 10_000
    outlier_threshold: float = 4.0
    random_state: int = 0
    chunk_size: int = 1024
    tau: Optional[float] = None
    cache_max_mb: float = 1024
    wide_features: str = "select"
    pipeline: str = "ours"


class TabSwiftEnsemble:
    """``fit(X_context, y)`` stores the (subsampled) context and fits one preprocessor per variant;
    ``predict_proba`` / ``predict`` run every member against it.  y: class ids 0..C-1 or real targets.
    Settings: ``settings`` (an ``EnsembleSettings``), with ``changes`` to its fields on top."""

    def __init__(self, network: TabSwiftNetwork, task: str, settings: Optional[EnsembleSettings] = None,
                 **changes):
        cfg = replace(settings or EnsembleSettings(), **changes)
        self.task = check_task(task)
        if cfg.wide_features not in WIDE_FEATURES:
            raise ValueError(f"wide_features must be one of {WIDE_FEATURES}, got {cfg.wide_features!r}")
        if cfg.pipeline not in PIPELINES:
            raise ValueError(f"pipeline must be one of {PIPELINES}, got {cfg.pipeline!r}")
        self.wide_features, self.pipeline = cfg.wide_features, cfg.pipeline
        if cfg.n_estimators < 1 or not cfg.norm_methods or cfg.softmax_temperature <= 0 or cfg.max_context_rows < 1:
            raise ValueError("need n_estimators >= 1, at least one norm method, softmax_temperature > 0 "
                             "and max_context_rows >= 1")
        self.network = network.eval()
        self.chunk_size = int(cfg.chunk_size)
        self.engine = TabSwiftEngine(network, chunk_size=self.chunk_size)
        self.n_estimators, self.norm_methods = int(cfg.n_estimators), tuple(cfg.norm_methods)
        self.class_shift, self.feature_shuffle = cfg.class_shift, cfg.feature_shuffle
        self.temperature, self.max_context_rows = float(cfg.softmax_temperature), int(cfg.max_context_rows)
        self.outlier_threshold, self.random_state, self.tau = cfg.outlier_threshold, cfg.random_state, cfg.tau
        self.cache_max_bytes = int(cfg.cache_max_mb * 2 ** 20)
        self._caches: Dict[Tuple, ContextCache] = {}
        #: bytes of block inputs kept for a model that saves its caches (``export_caches``): members' caches keep
        #: theirs while the inputs already kept stay below it; 0 keeps none
        self.keep_inputs_bytes = 0

    # ---- network / context caches ---------------------------------------------------------------
    def set_network(self, network: Optional[TabSwiftNetwork]) -> None:
        """Swap the network (after loading, moving device or fine-tuning), or drop it (None); drops every cached
        context."""
        self.network = network.eval() if network is not None else None
        self.engine = TabSwiftEngine(network, chunk_size=self.chunk_size) if network is not None else None
        self.clear_cache()

    def clear_cache(self) -> None:
        self._caches = {}

    @property
    def cache_nbytes(self) -> int:
        return sum(c.nbytes for c in self._caches.values())

    @property
    def kept_input_bytes(self) -> int:
        """Bytes of the block inputs the caches keep for saving."""
        return sum(h.numel() * h.element_size() for c in self._caches.values() for h in (c.block_inputs or ()))

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_caches"] = {}  # derived from the context and the weights: rebuilt on first use
        state.pop("last_exit_layers_", None)  # diagnostics of the last predict call only
        return state

    # ---- fit ----------------------------------------------------------------------------------
    def fit(self, X, y, n_classes: Optional[int] = None) -> "TabSwiftEnsemble":
        import uuid

        self.fit_token_ = uuid.uuid4().hex  # names this context: saved caches are used only with it
        y = np.asarray(y)
        if len(y) != len(X) or len(y) == 0:
            raise ValueError(f"need a non-empty context with one target per row, got {len(X)} rows, {len(y)} targets")
        rng = np.random.default_rng(self.random_state)
        self.n_classes_ = None
        if self.task == CLASSIFICATION:
            if not np.issubdtype(y.dtype, np.number) or np.any(y != np.round(y)) or y.min() < 0:
                raise ValueError("classification targets must be integer class ids 0..C-1")
            y = y.astype(np.int64)
            self.n_classes_ = int(n_classes) if n_classes is not None else int(y.max()) + 1
            if y.max() >= self.n_classes_:
                raise ValueError(f"class id {int(y.max())} >= n_classes={self.n_classes_}")
        else:
            y = y.astype(np.float64)
            if not np.isfinite(y).all():
                raise ValueError("regression targets contain NaN/inf")
        if len(y) > self.max_context_rows:
            idx = stratified_subsample(y, self.max_context_rows, rng, stratify=self.task == CLASSIFICATION)
            logger.info(f"TabSwift: context subsampled from {len(y)} to {len(idx)} rows (max_context_rows="
                        f"{self.max_context_rows}{', stratified by class' if self.task == CLASSIFICATION else ''})")
            X, y = _rows(X, idx), y[idx]
        self.y_context_ = y
        self.constant_target_ = float(y[0]) if self.task == REGRESSION and np.ptp(y) == 0 else None
        F_max = self.network.config.max_features
        self.preprocessors_: Dict[str, RowPreprocessor] = {}
        self.x_context_: Dict[str, np.ndarray] = {}
        authors = getattr(self, "pipeline", "ours") == "authors"
        reduce_to = F_max if self.wide_features == "pca" or authors else None
        for norm in self.norm_methods:
            pre = RowPreprocessor(norm, reduce_to, self.outlier_threshold, self.random_state,
                                  style="authors" if authors else "ours")
            self.x_context_[norm] = pre.fit_transform(X)
            self.preprocessors_[norm] = pre
        x0 = self.x_context_[self.norm_methods[0]]
        columns = np.arange(x0.shape[1])
        if x0.shape[1] > F_max and self.wide_features == "select":
            columns = screen_columns(x0, y, self.task == CLASSIFICATION)
        members = plan_members(self.n_estimators, len(columns), self.n_classes_ or 1, self.norm_methods,
                               rng, self.class_shift and self.task == CLASSIFICATION, self.feature_shuffle,
                               max_features=F_max, balanced=not authors)
        self.members_ = [Member(m.norm, tuple(int(columns[j]) for j in m.permutation), m.shift) for m in members]
        if x0.shape[1] > F_max:
            logger.info(f"TabSwift: {x0.shape[1]} features > F_max={F_max} ({self.wide_features}): "
                        f"{len(columns)} candidate columns, each member sees {min(len(columns), F_max)}")
        return self

    # ---- one ICL pass and the class hierarchy ---------------------------------------------------
    def _pass(self, xc: np.ndarray, yc: np.ndarray, xq: np.ndarray, n_classes: Optional[int],
              key: Tuple = ()) -> np.ndarray:
        """One ICL pass.  The context's K/V cache is built once per (member, hierarchy node) and kept
        while the caches stay under ``cache_max_mb``; beyond that it is rebuilt per call."""
        cache = self._caches.get(key) if key else None
        if cache is None:
            with autocast(self.network.registers.device):
                keep = bool(key) and self.kept_input_bytes < getattr(self, "keep_inputs_bytes", 0)
                cache = self.engine.encode_context(xc, yc, self.task, n_classes=n_classes, keep_inputs=keep)
            if key and self.cache_nbytes + cache.nbytes <= self.cache_max_bytes:
                self._caches[key] = cache
        with autocast(self.network.registers.device):
            pred = self.engine.predict(xq, cache, tau=self.tau)
        self.last_exit_layers_.append(pred.exit_layer.cpu().numpy())
        return pred.predictions.double().cpu().numpy()

    def _class_log_proba(self, xc, yc, xq, n_classes: int, key: Tuple = ()) -> np.ndarray:
        """log p(class | query) over ``n_classes`` ids, through the group hierarchy if needed."""
        if n_classes == 1:
            return np.zeros((len(xq), 1))
        C_max = self.network.config.max_classes
        if n_classes <= C_max:
            return log_softmax(self._pass(xc, yc, xq, n_classes, key))
        groups = class_groups(n_classes, C_max)
        starts = np.array([a for a, _ in groups])
        group_of = np.searchsorted(starts, yc, side="right") - 1
        log_group = log_softmax(self._pass(xc, group_of, xq, len(groups), key + ("groups",)))
        out = np.empty((len(xq), n_classes))
        for g, (a, b) in enumerate(groups):
            rows = group_of == g
            inner = (self._class_log_proba(xc[rows], yc[rows] - a, xq, b - a, key + (g,)) if rows.any()
                     else np.full((len(xq), b - a), -np.log(b - a)))  # group absent from context: uniform
            out[:, a:b] = log_group[:, g:g + 1] + inner
        return out

    def member_output(self, member: Member, xq: np.ndarray, index: Optional[int] = None) -> np.ndarray:
        """One member on already-preprocessed queries of its variant: log-probas (Q, C) or values (Q,).
        ``index`` (the member's position) keys its context cache; None = no caching."""
        perm = list(member.permutation)
        xc, xq = self.x_context_[member.norm][:, perm], xq[:, perm]
        key = () if index is None else ("member", index)
        if self.task == REGRESSION:
            return self._pass(xc, self.y_context_, xq, None, key)
        y = shift_labels(self.y_context_, member.shift, self.n_classes_)
        return unshift_columns(self._class_log_proba(xc, y, xq, self.n_classes_, key), member.shift)

    # ---- caches on disk -----------------------------------------------------------------------
    def warm(self, deadline: Optional[float] = None, clock=None) -> int:
        """Encode the members' contexts now (the first predict call's work) so that a save carries them, member by
        member while their block inputs stay within ``keep_inputs_bytes`` and their caches are kept (``cache_max_mb``);
        none is started once the next is due to end past ``deadline`` (a ``clock()`` time, ``time.monotonic`` by
        default) at the pace of the last one.  Members already cached are skipped.  Returns how many were encoded."""
        clock = clock or time.monotonic
        self.last_exit_layers_ = []
        done, last = 0, 0.0
        if getattr(self, "constant_target_", None) is not None:  # predicted without the network
            return 0
        for i, m in enumerate(self.members_):
            if any(key[:2] == ("member", i) for key in self._caches):
                continue  # encoded before
            start = clock()
            if deadline is not None and start + last >= deadline:
                break
            if self.kept_input_bytes >= getattr(self, "keep_inputs_bytes", 0):
                break
            before = len(self._caches)
            self.member_output(m, self.x_context_[m.norm][:1], i)
            done, last = done + 1, clock() - start
            if len(self._caches) == before:  # over cache_max_mb: the encoding was not kept, nor will the next be
                break
        return done

    def export_caches(self, max_bytes: int) -> Tuple[Dict[str, torch.Tensor], List[dict]]:
        """(tensors, records) of the caches that kept their block inputs (float16, ``engine._stored``), in members'
        order, while their size stays within ``max_bytes``: ``i.h<block>`` the block inputs and ``i.r<block>`` the
        register means of the i-th cache saved; each record holds its key and the scalars of its ``ContextCache``."""
        tensors, records, used = {}, [], 0
        for key, cache in self._caches.items():
            if cache.block_inputs is None:
                continue
            size = sum(h.numel() * h.element_size() for h in cache.block_inputs)
            if used + size > max_bytes:
                break
            i = len(records)
            for e, (h, r) in enumerate(zip(cache.block_inputs, cache.register_means)):
                tensors[f"{i}.h{e}"] = h.detach().to("cpu").contiguous()
                tensors[f"{i}.r{e}"] = r.detach().to("cpu", torch.float32).contiguous()
            records.append({"key": list(key), "task": cache.task, "n_features": cache.n_features,
                            "n_support": cache.n_support, "n_classes": cache.n_classes, "y_mean": cache.y_mean,
                            "y_std": cache.y_std, "layers": len(cache.block_inputs)})
            used += size
        return tensors, records

    def import_caches(self, tensors: Dict[str, torch.Tensor], records: List[dict]) -> int:
        """Rebuild the caches ``export_caches`` saved, on this ensemble's network (which must be the one they were
        encoded with), while they fit in ``cache_max_mb``; returns how many.  Block inputs stay in their stored
        precision, for the next save."""
        restored = 0
        width = torch.finfo(self.network.registers.dtype).bits // 8
        for i, rec in enumerate(records):
            layers = int(rec["layers"])
            inputs = [tensors[f"{i}.h{e}"] for e in range(layers)]
            size = sum(h.numel() * (2 * width + h.element_size()) for h in inputs)  # keys + values + inputs
            if self.cache_nbytes + size > self.cache_max_bytes:
                break
            stored = ContextCache(task=rec["task"], keys=[], values=[],
                                  register_means=[tensors[f"{i}.r{e}"] for e in range(layers)],
                                  n_features=int(rec["n_features"]), n_support=int(rec["n_support"]),
                                  n_classes=rec["n_classes"], y_mean=float(rec["y_mean"]), y_std=float(rec["y_std"]),
                                  block_inputs=inputs)
            with autocast(self.network.registers.device):
                self._caches[tuple(rec["key"])] = self.engine.restore_context(stored)
            restored += 1
        return restored

    def _members_mean(self, X) -> np.ndarray:
        if not hasattr(self, "members_"):
            raise RuntimeError("TabSwiftEnsemble.predict called before fit")
        if self.network is None:
            raise RuntimeError("TabSwiftEnsemble has no network (detached for saving, or its model predicts "
                               "the prior); call set_network")
        xq = {norm: pre.transform(X) for norm, pre in self.preprocessors_.items()}
        self.last_exit_layers_ = []
        return np.mean([self.member_output(m, xq[m.norm], i) for i, m in enumerate(self.members_)], axis=0)

    @property
    def last_mean_exit_layer(self) -> float:
        """Mean number of blocks a query went through in the last predict call (all members/passes)."""
        layers = getattr(self, "last_exit_layers_", [])
        return float(np.concatenate(layers).mean()) if layers else float("nan")

    # ---- public -------------------------------------------------------------------------------
    def predict_proba(self, X) -> np.ndarray:
        if self.task != CLASSIFICATION:
            raise ValueError("predict_proba is for classification; use predict")
        if len(X) == 0:
            return np.zeros((0, self.n_classes_))
        z = self._members_mean(X) / self.temperature
        p = np.exp(log_softmax(z))
        return p / p.sum(1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        if self.task == CLASSIFICATION:
            return self.predict_proba(X).argmax(1)
        if self.constant_target_ is not None or len(X) == 0:
            return np.full(len(X), self.constant_target_ if self.constant_target_ is not None else 0.0)
        return self._members_mean(X)


__all__ = ["Member", "PIPELINES", "TabSwiftEnsemble", "WIDE_FEATURES", "class_groups", "latin_permutations", "log_softmax", "plan_members",
           "shift_labels", "stratified_subsample", "unshift_columns"]
