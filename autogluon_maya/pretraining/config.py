"""Settings of one pretraining stage, stored in every checkpoint so a resume can check it continues the
same run.  Defaults are a recipe sized for 2 CPU cores (docs/pretraining.md).

Stage 2 (the paper's long-context stage) differs from stage 1 in the *shape* of its tasks: the row
count is drawn per batch, log-uniform in ``[min_rows, rows]``, and the batch holds as many tasks as
``rows_per_step`` allows, capped at ``batch_size`` tasks (short tasks come many to a batch, 2,048-row
tasks one or two; below ``rows_per_step / batch_size`` rows -- 256 at the defaults -- the cap binds and
a step holds fewer rows, and above it attention's cost grows with the row count, so steps are not all
equal), features go up to F_max, and some tasks get uninformative
columns.  ``rows`` is the ceiling: 2,048 on CPU serves the default ``max_context_rows``; a GPU user
asks for ``--rows 20000`` (the paper's stage 2).  ``min_rows`` 16 keeps support sets of ~2-14 rows in
the prior, the tiny-table regime users bring.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Dict, Optional

from autogluon_maya.tabswift.config import RELEASED, SMALL, TINY, TabSwiftConfig

MODEL_PRESETS = {"released": RELEASED, "small": SMALL, "tiny": TINY}
TARGET_MODES = ("both", "one")

#: What differs between stages when the user does not say (TabICL v1's recipe shape, scaled down).
STAGE_DEFAULTS = {
    1: dict(rows=256, batch_size=16, lr=5e-4, warmup_fraction=0.02),
    2: dict(rows=2048, min_rows=16, rows_per_step=4096, batch_size=16, lr=1e-4, warmup_fraction=0.0,
            noise_feature_prob=0.3),
    3: dict(rows=256, batch_size=16, lr=1e-3, warmup_fraction=0.02),
}


@dataclass
class PretrainConfig:
    out_dir: str = "runs/tabswift"
    stage: int = 1
    model: str = "small"                 # preset name or a TabSwiftConfig JSON file
    init_from: Optional[str] = None      # a TabSwift checkpoint (stage 2/3 start from the previous stage)
    prior: str = "mix_scm"
    seed: int = 0
    steps: int = 10_000
    batch_size: Optional[int] = None     # tasks per optimizer step
    micro_batch: Optional[int] = None    # tasks per forward (gradient accumulation); None = batch_size
    rows: Optional[int] = None           # rows per task (support + queries); with min_rows: the largest
    min_rows: Optional[int] = None       # rows drawn per batch, log-uniform in [min_rows, rows]; None = fixed
    rows_per_step: Optional[int] = None  # tasks per batch = clip(rows_per_step // rows drawn, 1, batch_size)
    rows_ramp_steps: int = 0             # curriculum: the row ceiling grows log-linearly min_rows -> rows
    target_mode: str = "both"            # "both": each task in both heads; "one": one head drawn per task
    noise_feature_prob: Optional[float] = None  # chance a task gets extra uninformative columns (None = 0)
    min_features: int = 2
    max_prior_features: Optional[int] = None  # widest synthetic task (None = F_max); the network pads to F_max
    lr: Optional[float] = None
    weight_decay: float = 0.0
    warmup_fraction: Optional[float] = None
    min_lr_fraction: float = 0.1         # cosine decays to lr * min_lr_fraction
    clip_grad_norm: float = 1.0
    exit_tolerance: float = 0.1          # stage 3: regression "agreement" in standardized units
    num_workers: int = 1                 # prior-generating DataLoader workers
    threads: int = 1                     # torch threads of the training process
    device: str = "auto"
    checkpoint_every: int = 200
    log_every: int = 20
    time_limit: Optional[float] = None   # seconds of this invocation; the run stops cleanly and resumes later
    stop_after: Optional[int] = None     # stop (cleanly, resumable) once this step is reached
    export: Optional[str] = None         # write a TabSwift checkpoint here at the end

    def __post_init__(self):
        if self.stage not in STAGE_DEFAULTS:
            raise ValueError(f"stage must be 1, 2 or 3, got {self.stage}")
        for key, value in STAGE_DEFAULTS[self.stage].items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        if self.micro_batch is None:
            self.micro_batch = self.batch_size
        if self.batch_size < 1 or self.micro_batch < 1 or self.batch_size % self.micro_batch:
            raise ValueError(f"batch_size ({self.batch_size}) must be a positive multiple of micro_batch "
                             f"({self.micro_batch})")
        if self.max_prior_features is not None and self.max_prior_features < self.min_features:
            raise ValueError(f"max_prior_features ({self.max_prior_features}) < min_features ({self.min_features})")
        if self.rows < 4 or self.steps < 1:
            raise ValueError("need rows >= 4 and steps >= 1")
        if self.min_rows is not None and not 4 <= self.min_rows <= self.rows:
            raise ValueError(f"need 4 <= min_rows ({self.min_rows}) <= rows ({self.rows})")
        if self.rows_per_step is not None and self.rows_per_step < self.rows:
            raise ValueError(f"rows_per_step ({self.rows_per_step}) must hold at least one task of rows={self.rows}")
        if self.rows_ramp_steps < 0 or (self.rows_ramp_steps and self.min_rows is None):
            raise ValueError("rows_ramp_steps needs min_rows (the curriculum ramps from min_rows to rows) and >= 0")
        if self.target_mode not in TARGET_MODES:
            raise ValueError(f"target_mode must be one of {TARGET_MODES}, got {self.target_mode!r}")
        if self.noise_feature_prob is not None and not 0.0 <= self.noise_feature_prob <= 1.0:
            raise ValueError(f"noise_feature_prob must lie in [0, 1], got {self.noise_feature_prob}")

    def network_config(self) -> TabSwiftConfig:
        if self.model in MODEL_PRESETS:
            return MODEL_PRESETS[self.model]
        path = Path(self.model)
        if not path.is_file():
            raise ValueError(f"model must be one of {sorted(MODEL_PRESETS)} or a JSON file, got {self.model!r}")
        return TabSwiftConfig.from_dict(json.loads(path.read_text()))

    #: fields that may change between invocations of the same run without breaking it
    RESUMABLE_CHANGES = ("out_dir", "num_workers", "threads", "device", "checkpoint_every", "log_every",
                         "time_limit", "stop_after", "export")

    def identity(self) -> Dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k not in self.RESUMABLE_CHANGES}

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "PretrainConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


__all__ = ["MODEL_PRESETS", "PretrainConfig", "STAGE_DEFAULTS", "TARGET_MODES"]
