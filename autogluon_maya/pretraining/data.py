"""Batches of synthetic pretraining tasks, reproducible from (seed, batch index) alone.

Why indexed by batch number: a batch is a pure function of ``(seed, index)``, so a resumed run asks
for batch ``step`` and gets exactly the data an uninterrupted run would have seen, whatever the number
of DataLoader workers or Ray workers, and no data-loader state needs checkpointing.

Sources:
- ``TabICLPrior``: ``tabicl.prior.PriorDataset`` (optional extra ``autogluon_maya[pretrain]``) with
  ``regression=True``; the class target is derived by ``targets.discretize``.  Built lazily inside each
  worker process (its hyperparameter samplers hold closures that do not pickle) with ``n_jobs=1`` and
  one thread (other settings crash or oversubscribe the cores).
- ``random_mlp``: a small random-MLP regression prior in plain numpy (<= 20 features).  Not a substitute
  for the SCM prior: it exists so that tests and smoke runs need no extra dependency, and as the easy
  half of ``mix_scm+random_mlp`` (even batch indices random_mlp, odd ones mix_scm), a curriculum: on 2
  CPU cores a small model learnt in-context regression within ~100 steps on random_mlp tasks, but not
  within 1,400 steps on mix_scm alone (regression MSE stayed at 0.99, i.e. predicting the mean).

Task sizes (stage 2, ``TaskShape.min_rows``): the row count T of batch ``i`` is drawn log-uniform in
``[min_rows, ceiling(i)]`` -- the ceiling grows from ``min_rows`` to ``rows`` over ``ramp_batches``
when a curriculum is asked for -- and the batch holds ``clip(rows_per_batch // T, 1, batch_size)``
tasks: a step holds about ``rows_per_batch`` rows for T >= rows_per_batch / batch_size, fewer below
(the task cap binds), and attention's share grows with T.  These draws come from their own
random stream, so a fixed-size run (stage 1) sees exactly the batches it saw before they existed.

Uninformative columns (``noise_feature_prob``): a task so chosen gets k extra columns, k log-uniform
in [1, room to F], each either N(0, 1) noise or a row-shuffled copy of one of its own columns (same
marginal, no relation to the target), and its columns are then shuffled.  Users' tables carry such
columns, and a wide table split into feature subsets at inference hands the network mostly-noise views.

Every batch is a dict of tensors: ``x`` (B, T, F_max) zero-padded features, ``n_features`` (B,),
``y_reg`` (B, T) standardized targets, ``y_cls`` (B, T) class ids, ``n_classes`` (B,) and the shared
``n_support`` (first rows are support, the rest queries); with ``one_target_mode`` also ``cls_mask``
(B,) bool: the tasks trained in the classification head (the others in the regression head).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from .targets import discretize

PRIORS = ("mix_scm", "mlp_scm", "tree_scm", "graph_scm", "random_mlp", "mix_scm+random_mlp")


@dataclass(frozen=True)
class TaskShape:
    """Sizes of the tasks in a batch; all tasks of one batch share rows and support size."""

    batch_size: int = 16
    rows: int = 256
    min_features: int = 2
    max_features: int = 100
    max_classes: int = 10
    min_support_fraction: float = 0.1
    max_support_fraction: float = 0.9
    min_rows: Optional[int] = None       # None: every batch has ``rows`` rows and ``batch_size`` tasks
    rows_per_batch: Optional[int] = None  # row budget of a batch when rows vary (None: batch_size tasks)
    ramp_batches: int = 0                # curriculum length in batch indices (0: full range at once)
    noise_feature_prob: float = 0.0
    one_target_mode: bool = False

    def size_of(self, index: int, seed: int):
        """(rows, tasks, support rows) of batch ``index``; None for the support when the prior draws it."""
        if self.min_rows is None:
            return self.rows, self.batch_size, None
        rng = np.random.default_rng([seed, index, 1])  # own stream: see module docstring
        lo, hi = np.log(self.min_rows), np.log(self.rows)
        if self.ramp_batches:
            hi = lo + (hi - lo) * min(1.0, index / self.ramp_batches)
        rows = int(round(np.exp(rng.uniform(lo, hi))))
        tasks = self.batch_size if self.rows_per_batch is None else \
            int(np.clip(self.rows_per_batch // rows, 1, self.batch_size))
        fraction = rng.uniform(self.min_support_fraction, self.max_support_fraction)
        support = int(np.clip(round(fraction * rows), 2, rows - 2))
        return rows, tasks, support


def _seed_for(seed: int, index: int) -> int:
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def unify(x: torch.Tensor, y_reg: torch.Tensor, n_features: torch.Tensor, n_support: int,
          max_classes: int, rng: np.random.Generator) -> Dict[str, torch.Tensor]:
    """Attach class targets derived from each task's regression target.

    tabicl occasionally returns a task whose target is all NaN (a constant SCM output z-scored by a
    zero deviation; seen at batch 151 of seed 0): such a target becomes the constant 0 -- a trivial but
    valid task with one class -- instead of a NaN loss.  Non-finite features become 0 likewise."""
    y_reg = torch.where(torch.isfinite(y_reg).all(1, keepdim=True), y_reg, torch.zeros_like(y_reg))
    x = torch.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
    classes, counts = [], []
    for task_y in y_reg.numpy():
        c, k = discretize(task_y, n_support, max_classes, rng)
        classes.append(c)
        counts.append(k)
    return {"x": x.float(), "n_features": n_features.long(), "y_reg": y_reg.float(),
            "y_cls": torch.as_tensor(np.stack(classes)), "n_classes": torch.as_tensor(counts),
            "n_support": torch.tensor(int(n_support))}


class PriorBatches(Dataset):
    """Map-style dataset: item ``i`` is batch ``i`` of the stream (see module docstring)."""

    def __init__(self, prior: str = "mix_scm", shape: TaskShape = TaskShape(), seed: int = 0,
                 length: int = 10 ** 9):
        if prior not in PRIORS:
            raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
        self.prior, self.shape, self.seed, self.length = prior, shape, int(seed), int(length)
        self._tabicl = None

    def __len__(self) -> int:
        return self.length

    def _tabicl_dataset(self):
        if self._tabicl is None:
            try:
                from tabicl.prior import PriorDataset
            except ImportError as err:
                raise ImportError("the SCM priors need tabicl>=2.2: pip install 'autogluon_maya[pretrain]' "
                                  "(or use prior='random_mlp' for a dependency-free smoke run)") from err
            s = self.shape
            self._tabicl = PriorDataset(regression=True, batch_size=s.batch_size, batch_size_per_gp=4,
                                        min_features=s.min_features, max_features=s.max_features,
                                        max_classes=s.max_classes, max_seq_len=s.rows, min_seq_len=None,
                                        min_train_size=s.min_support_fraction,
                                        max_train_size=s.max_support_fraction,
                                        prior_type=self.prior.split("+")[0], n_jobs=1)
        return self._tabicl

    def __getitem__(self, index: int) -> Dict[str, torch.Tensor]:
        seed = _seed_for(self.seed, index)
        rng = np.random.default_rng(seed)
        rows, tasks, support = self.shape.size_of(index, self.seed)
        if self.prior == "random_mlp" or (self.prior == "mix_scm+random_mlp" and index % 2 == 0):
            batch = random_mlp_batch(self.shape, rng, rows, tasks, support)
        else:
            # tabicl draws from the global RNGs: seed them so the batch depends on (seed, index) only
            torch.manual_seed(seed)
            np.random.seed(seed % 2 ** 32)
            random.seed(seed)
            prior = self._tabicl_dataset()
            _set_task_size(prior, rows, support)
            with torch.no_grad():
                x, y, d, _, train_sizes = prior.get_batch(tasks)
            batch = unify(x, y, d, int(train_sizes[0]), self.shape.max_classes, rng)
        return self._extras(batch, index)

    def _extras(self, batch: Dict[str, torch.Tensor], index: int) -> Dict[str, torch.Tensor]:
        """Noise columns and the per-task head draw, from a stream of their own (stage 1 unchanged)."""
        s = self.shape
        if not (s.noise_feature_prob or s.one_target_mode):
            return batch
        rng = np.random.default_rng([self.seed, index, 2])
        if s.noise_feature_prob:
            add_noise_features(batch, s.noise_feature_prob, rng)
        if s.one_target_mode:
            batch["cls_mask"] = torch.as_tensor(rng.random(len(batch["x"])) < 0.5)
        return batch


def _set_task_size(prior, rows: int, support: Optional[int]) -> None:
    """Point tabicl's sampler at this batch's row count and support size (stage 2).

    ``PriorDataset`` fixes the sizes at construction; its prior reads them from attributes at every
    ``get_batch``, and an integer train-size range ``[s, s + 1)`` makes its draw exactly ``s``."""
    if support is None:
        return
    for obj in (prior, getattr(prior, "prior", None)):
        if obj is not None:
            obj.min_seq_len, obj.max_seq_len = None, rows
            obj.min_train_size, obj.max_train_size = support, support + 1


def add_noise_features(batch: Dict[str, torch.Tensor], prob: float, rng: np.random.Generator) -> None:
    """In place: tasks drawn with probability ``prob`` get uninformative columns (module docstring)."""
    x, n_features = batch["x"], batch["n_features"]
    B, T, F = x.shape
    for b in range(B):
        d = int(n_features[b])
        room = F - d
        if room < 1 or rng.random() >= prob:
            continue
        k = int(round(np.exp(rng.uniform(0.0, np.log(room)))))
        noise = rng.standard_normal((T, k)).astype(np.float32)
        for j in np.flatnonzero(rng.random(k) < 0.5):  # row-shuffled copies of the task's own columns
            noise[:, j] = x[b, torch.from_numpy(rng.permutation(T)), int(rng.integers(d))].numpy()
        cols = torch.cat([x[b, :, :d], torch.from_numpy(noise)], 1)
        x[b, :, :d + k] = cols[:, torch.from_numpy(rng.permutation(d + k))]
        n_features[b] = d + k


def random_mlp_batch(shape: TaskShape, rng: np.random.Generator, rows: Optional[int] = None,
                     tasks: Optional[int] = None, support: Optional[int] = None) -> Dict[str, torch.Tensor]:
    """Tasks y = MLP(x) + noise with a random 1-hidden-layer tanh MLP per task, standardized."""
    B, T, F = tasks or shape.batch_size, rows or shape.rows, shape.max_features
    n_support = int(rng.uniform(shape.min_support_fraction, shape.max_support_fraction) * T)
    n_support = min(max(n_support, 2), T - 1) if support is None else support
    x = np.zeros((B, T, F), dtype=np.float32)
    y = np.zeros((B, T), dtype=np.float32)
    n_features = rng.integers(shape.min_features, min(shape.max_features, 20) + 1, size=B)
    for b, d in enumerate(n_features):
        xb = rng.standard_normal((T, d))
        w1 = rng.standard_normal((d, 16)) / np.sqrt(d)
        out = np.tanh(xb @ w1) @ rng.standard_normal(16) + 0.1 * rng.standard_normal(T)
        x[b, :, :d] = xb
        y[b] = (out - out.mean()) / (out.std() + 1e-8)
    return unify(torch.from_numpy(x), torch.from_numpy(y), torch.as_tensor(n_features), n_support,
                 shape.max_classes, rng)


def _worker_init(_worker_id: int) -> None:
    """Prior workers get one thread each: the trainer owns the other cores."""
    torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        pass


class BatchIndexSampler(torch.utils.data.Sampler):
    """Batch indices ``start, start + stride, ...`` (stride = number of data-parallel ranks)."""

    def __init__(self, start: int, stop: int, stride: int = 1):
        self.start, self.stop, self.stride = start, stop, stride

    def __iter__(self):
        return iter(range(self.start, self.stop, self.stride))

    def __len__(self) -> int:
        return len(range(self.start, self.stop, self.stride))


def make_loader(dataset: PriorBatches, start: int, stop: int, num_workers: int = 1, rank: int = 0,
                world_size: int = 1, prefetch_factor: Optional[int] = 4) -> DataLoader:
    """Batch ``step * world_size + rank`` for steps ``start .. stop - 1``; items are already batches."""
    sampler = BatchIndexSampler(start * world_size + rank, stop * world_size, world_size)
    return DataLoader(dataset, batch_size=None, sampler=sampler, num_workers=num_workers,
                      worker_init_fn=_worker_init if num_workers else None,
                      prefetch_factor=prefetch_factor if num_workers else None,
                      persistent_workers=False)


__all__ = ["PRIORS", "PriorBatches", "TaskShape", "add_noise_features", "make_loader", "random_mlp_batch", "unify"]
