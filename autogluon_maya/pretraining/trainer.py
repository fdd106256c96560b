"""The pretraining loop: one function for CPU, one GPU, or one rank of a Ray Train (DDP) job.

Resumability: ``<out_dir>/state.pt`` holds model, optimizer, scheduler, RNG state, step and counters,
written atomically every ``checkpoint_every`` steps and at the end (also when ``time_limit`` stops the
run).  Restarting the same command continues from it; because batch ``i`` is a pure function of
(seed, i) (``data.py``), the continued run is bit-for-bit the uninterrupted one on CPU.  The file is
read back with ``torch.load(weights_only=True)``: tensors and plain containers only, never code.

Outputs: ``metrics.csv`` (one row per ``log_every`` steps), ``summary.json`` (the training record that
goes into the exported checkpoint), ``loss.png``, and with ``export`` a TabSwift safetensors checkpoint.
"""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import math
import os
import platform
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Dict, Optional

import torch
from tqdm.auto import tqdm

from autogluon_maya.common.training import autocast
from autogluon_maya.tabswift.config import TabSwiftConfig
from autogluon_maya.tabswift.losses import backbone_loss, exit_loss
from autogluon_maya.tabswift.network import TabSwiftNetwork
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint, read_checkpoint_info, save_checkpoint

from .config import PretrainConfig
from .data import PriorBatches, TaskShape, make_loader

logger = logging.getLogger(f"autogluon.ext.{__name__}")
STATE_FILE = "state.pt"


# ---- model, parameters, schedule ---------------------------------------------------------------
def run_network_config(cfg: PretrainConfig, init_config: Optional[TabSwiftConfig] = None) -> TabSwiftConfig:
    """The network this run trains.  With ``init_from``, the preset must match the checkpoint's size; how
    class ids are embedded (``label_encoding``: a converted release uses ``"scalar"``) is the checkpoint's,
    and stage 3 adds exit heads to a checkpoint that has none (the released ``swift.ckpt`` has none)."""
    preset = cfg.network_config()
    if not cfg.init_from:
        return preset
    if init_config is None:
        init_config = TabSwiftConfig.from_dict(read_checkpoint_info(cfg.init_from)["config"])
    own = dict(label_encoding=init_config.label_encoding, early_exit=init_config.early_exit)
    if init_config != replace(preset, **own):
        raise ValueError(f"init_from {cfg.init_from} has config {init_config}, but model={cfg.model!r} is {preset}"
                         + ("; a converted released checkpoint needs --model released" if own["label_encoding"] ==
                            "scalar" else ""))
    return replace(init_config, early_exit=True) if cfg.stage == 3 else init_config


def build_network(cfg: PretrainConfig) -> TabSwiftNetwork:
    if cfg.init_from:
        net = load_checkpoint(cfg.init_from)
        config = run_network_config(cfg, net.config)
        if config != net.config:  # stage 3 on a backbone without exit heads: new heads, seeded
            torch.manual_seed(cfg.seed)
            with_heads = TabSwiftNetwork(config)
            result = with_heads.load_state_dict(net.state_dict(), strict=False)
            stray = [k for k in result.missing_keys if not k.startswith(("layer_heads.", "exit_heads."))]
            if result.unexpected_keys or stray:
                raise ValueError(f"init_from {cfg.init_from} does not fit stage {cfg.stage}'s network: "
                                 f"unexpected weights {list(result.unexpected_keys)[:5]}, missing backbone "
                                 f"weights {stray[:5]}")
            net = with_heads
        return net.train()
    torch.manual_seed(cfg.seed)
    return TabSwiftNetwork(cfg.network_config()).train()


def set_trainable(net: TabSwiftNetwork, stage: int) -> None:
    """Stages 1-2 train backbone + final heads; stage 3 trains only the per-layer and exit heads.

    Freezing (rather than merely not using) the other group keeps DDP from waiting for gradients
    that never come, and the frozen backbone is exactly unchanged after stage 3.
    """
    exit_part = {id(p) for m in (net.layer_heads, net.exit_heads) for p in m.parameters()}
    for p in net.parameters():
        p.requires_grad_((id(p) in exit_part) == (stage == 3))


def make_optimizer(net: torch.nn.Module, cfg: PretrainConfig):
    params = [p for p in net.parameters() if p.requires_grad]
    if not params:
        raise ValueError(f"stage {cfg.stage} has nothing to train (stage 3 needs early_exit=True)")
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    warmup = int(round(cfg.warmup_fraction * cfg.steps))
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, cfg.steps - warmup),
                                                        eta_min=cfg.lr * cfg.min_lr_fraction)
    if warmup == 0:
        return opt, cosine
    linear = torch.optim.lr_scheduler.LinearLR(opt, start_factor=1e-3, total_iters=warmup)
    return opt, torch.optim.lr_scheduler.SequentialLR(opt, [linear, cosine], milestones=[warmup])


def step_flops(net: TabSwiftNetwork, cfg: PretrainConfig, batch: Dict[str, torch.Tensor]) -> float:
    """Model FLOPs of one optimizer step on ``batch``: L(18 d² S + 4 d S C) per task
    forward, x3 for forward + backward (stage 3: forward only), x2 when each task runs in both target
    modes (stage 3 always; stages 1-2 unless ``target_mode="one"``)."""
    c = net.config
    tasks, rows = batch["x"].shape[:2]
    S, C = c.n_registers + rows, c.n_registers + int(batch["n_support"])
    forward = c.n_layers * (18 * c.d_model ** 2 * S + 4 * c.d_model * S * C)
    modes = 1 if "cls_mask" in batch and cfg.stage != 3 else 2
    return modes * tasks * forward * (1 if cfg.stage == 3 else 3)


def task_shape(cfg: PretrainConfig, net: TabSwiftNetwork, world_size: int = 1) -> TaskShape:
    """The prior's task sizes for this stage (``data.TaskShape``); the curriculum counts batch indices."""
    c = net.config
    return TaskShape(batch_size=cfg.batch_size, rows=cfg.rows, min_features=cfg.min_features,
                     max_features=min(cfg.max_prior_features or c.max_features, c.max_features),
                     max_classes=c.max_classes, min_rows=cfg.min_rows, rows_per_batch=cfg.rows_per_step,
                     ramp_batches=cfg.rows_ramp_steps * world_size,
                     noise_feature_prob=cfg.noise_feature_prob or 0.0,
                     one_target_mode=cfg.target_mode == "one" and cfg.stage != 3)


# ---- checkpoint state --------------------------------------------------------------------------
def save_state(path: Path, net, opt, sched, counters: Dict, cfg: PretrainConfig) -> None:
    state = {"model": net.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
             "torch_rng": torch.get_rng_state(), "counters": counters, "config": cfg.identity()}
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def load_state(path: Path, cfg: PretrainConfig) -> Dict:
    state = torch.load(path, map_location="cpu", weights_only=True)
    saved, defaults = state["config"], PretrainConfig.__dataclass_fields__
    # a setting added after the run started is absent from its state: it ran with that setting's default
    diff = {k: (saved.get(k, defaults[k].default), v) for k, v in cfg.identity().items()
            if saved.get(k, defaults[k].default) != v}
    if diff:
        raise ValueError(f"{path} belongs to a different run (saved vs now: {diff}); use another out_dir")
    return state


# ---- logging -----------------------------------------------------------------------------------
class MetricsLog:
    """Appends rows to metrics.csv; on resume drops rows newer than the checkpoint (they will be redone)."""

    def __init__(self, path: Path, resume_step: int):
        self.path = path
        rows = []
        if path.exists() and resume_step > 0:
            with open(path) as f:
                rows = [r for r in csv.DictReader(f) if int(r["step"]) <= resume_step]
        self.rows = rows
        self._write_all()

    def _fields(self):
        return list(dict.fromkeys(k for r in self.rows for k in r))

    def _write_all(self):
        if not self.rows:
            self.path.write_text("")
            return
        with open(self.path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self._fields(), restval="")
            w.writeheader()
            w.writerows(self.rows)

    def add(self, row: Dict) -> None:
        """Append one row.  The file is rewritten only at start (to drop rows past the checkpoint) or when a
        row brings a new column (a run resumed by a newer version that logs more)."""
        row = {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()}
        first, new_column = not self.rows, bool(self.rows) and not set(row) <= set(self._fields())
        self.rows.append(row)
        if new_column:
            self._write_all()
            return
        with open(self.path, "w" if first else "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self._fields(), restval="")
            if first:
                w.writeheader()
            w.writerow(row)


def plot_losses(metrics_csv: Path, png: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logger.warning("matplotlib is not installed: no loss plot")
        return
    with open(metrics_csv) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return
    steps = [int(r["step"]) for r in rows]
    keys = [k for k in rows[0] if k in ("loss", "ce", "mse", "mae") or k.endswith(("_head", "_exit_bce"))]
    fig, ax = plt.subplots(figsize=(7, 4))
    for k in keys:
        ax.plot(steps, [float(r[k]) for r in rows], label=k)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (query rows)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


class _Window:
    """Sums over the steps since the last log row.  A loss part a step did not have (one target mode
    drawn per task: a batch may hold no regression task) is averaged over the steps that had it."""

    def __init__(self):
        self.t, self.wait, self.steps, self.tasks, self.rows, self.flops = time.time(), 0.0, 0, 0, 0, 0.0
        self.sums: Dict[str, float] = {}
        self.counts: Dict[str, int] = {}

    def add(self, parts: Dict[str, float], tasks: int, rows: int, flops: float) -> None:
        for k, v in parts.items():
            self.sums[k] = self.sums.get(k, 0.0) + v
            self.counts[k] = self.counts.get(k, 0) + 1
        self.steps, self.tasks, self.rows, self.flops = self.steps + 1, self.tasks + tasks, self.rows + rows, self.flops + flops

    def means(self, keys) -> Dict[str, float]:
        """Every key of ``keys`` (NaN if absent) first, so metrics.csv keeps one set of columns."""
        out = {k: float("nan") for k in keys}
        out.update({k: v / self.counts[k] for k, v in self.sums.items()})
        return out

    def rates(self, now: float, world_size: int) -> Dict[str, float]:
        dt = max(now - self.t, 1e-9)
        return {"tasks_per_s": self.tasks * world_size / dt, "mean_rows": self.rows / max(self.steps, 1),
                "data_wait_fraction": self.wait / dt, "model_gflops_per_s": self.flops * world_size / dt / 1e9}


def loss_keys(cfg: PretrainConfig):
    return ("ce", "mse", "mae", "loss") if cfg.stage != 3 else ()


# ---- the loop ----------------------------------------------------------------------------------
def _all_ranks(flag: bool, world_size: int, device, any_rank: bool) -> bool:
    """``flag`` agreed over the DDP ranks (any rank true / all ranks true); the flag itself on one process.

    Decisions such as "skip this update" or "stop now" taken from a rank's own loss or clock would let
    the ranks' weights diverge or leave one rank waiting forever in the next all-reduce."""
    if world_size <= 1 or not torch.distributed.is_available() or not torch.distributed.is_initialized():
        return flag
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX if any_rank else torch.distributed.ReduceOp.MIN)
    return bool(t.item() > 0.5)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def train(cfg: PretrainConfig, rank: int = 0, world_size: int = 1,
          wrap_model: Optional[Callable[[torch.nn.Module], torch.nn.Module]] = None,
          report: Optional[Callable[[Dict], None]] = None, progress: bool = True) -> Dict:
    """Run (or resume) one stage; returns the summary.  Rank 0 alone writes files."""
    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(max(1, cfg.threads))
    device = resolve_device(cfg.device)
    net = build_network(cfg).to(device)
    set_trainable(net, cfg.stage)
    opt, sched = make_optimizer(net, cfg)
    trainable = [p for p in net.parameters() if p.requires_grad]
    counters = {"step": 0, "tasks_seen": 0, "train_seconds": 0.0}
    state_path = out / STATE_FILE
    if state_path.exists():
        state = load_state(state_path, cfg)
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        counters = dict(state["counters"])
        logger.info(f"resuming {out} at step {counters['step']}")
    model = wrap_model(net) if wrap_model else net
    is_main = rank == 0
    metrics = MetricsLog(out / "metrics.csv", counters["step"]) if is_main else None
    if is_main:
        (out / "config.json").write_text(json.dumps(cfg.to_dict(), indent=2))

    shape = task_shape(cfg, net, world_size)
    stop = min(cfg.steps, cfg.stop_after) if cfg.stop_after is not None else cfg.steps
    loader = make_loader(PriorBatches(cfg.prior, shape, cfg.seed), min(counters["step"], stop), stop,
                         cfg.num_workers, rank, world_size)
    loss_fn = exit_loss if cfg.stage == 3 else backbone_loss
    start, last_save, window = time.time(), counters["step"], _Window()
    cpu_start = time.process_time()  # the training process's CPU time (prior workers not included)
    bar = tqdm(total=cfg.steps, initial=counters["step"], disable=not (progress and is_main),
               desc=f"TabSwift stage {cfg.stage}", dynamic_ncols=True)
    t_wait = time.time()
    for batch in loader:
        window.wait += time.time() - t_wait
        batch = {k: v.to(device) for k, v in batch.items()}
        opt.zero_grad(set_to_none=True)
        parts_sum: Dict[str, float] = {}
        n_tasks = len(batch["x"])  # varies per batch in stage 2 (rows_per_step)
        starts = range(0, n_tasks, cfg.micro_batch)
        for m, a in enumerate(starts):
            sl = slice(a, a + cfg.micro_batch)
            micro = {k: (v if v.dim() == 0 else v[sl]) for k, v in batch.items()}
            weight = len(micro["x"]) / n_tasks  # = 1 / n_micro when micro_batch divides the batch
            sync = model.no_sync() if (world_size > 1 and m < len(starts) - 1 and hasattr(model, "no_sync")) \
                else contextlib.nullcontext()
            with sync, autocast(device):
                parts = loss_fn(model, micro, cfg.exit_tolerance) if cfg.stage == 3 else loss_fn(model, micro)
            (parts["loss"] * weight).backward()
            for k, v in parts.items():
                parts_sum[k] = parts_sum.get(k, 0.0) + float(v.detach()) * weight
        grad_norm = float(torch.nn.utils.clip_grad_norm_(trainable, cfg.clip_grad_norm))
        healthy = math.isfinite(grad_norm) and all(map(math.isfinite, parts_sum.values()))
        if not _all_ranks(healthy, world_size, device, any_rank=False):  # every rank must take the same decision
            healthy = False
        if healthy:
            opt.step()
            counters["bad_steps_in_a_row"] = 0
        else:  # a rare degenerate synthetic task must not poison the weights: skip the update, keep a record
            counters["skipped_steps"] = counters.get("skipped_steps", 0) + 1
            counters["bad_steps_in_a_row"] = counters.get("bad_steps_in_a_row", 0) + 1
            logger.warning(f"non-finite loss/gradient at step {counters['step']} (batch "
                           f"{counters['step'] * world_size + rank}): {parts_sum}, grad norm {grad_norm}; update skipped")
            if counters["bad_steps_in_a_row"] >= 10:
                raise FloatingPointError(f"10 non-finite steps in a row up to step {counters['step']}: training diverged")
            opt.zero_grad(set_to_none=True)
        sched.step()
        counters["step"] += 1
        counters["tasks_seen"] += n_tasks * world_size
        window.add({**parts_sum, "grad_norm": grad_norm}, n_tasks, len(batch["x"][0]), step_flops(net, cfg, batch))
        bar.update(1)
        step = counters["step"]
        if step % cfg.log_every == 0 or step == cfg.steps:
            now = time.time()
            row = {"step": step, "stage": cfg.stage, **window.means(loss_keys(cfg)),
                   "lr": sched.get_last_lr()[0], "tasks_seen": counters["tasks_seen"],
                   "elapsed_s": counters["train_seconds"] + now - start, **window.rates(now, world_size)}
            bar.set_postfix(loss=f"{row['loss']:.3f}", tps=f"{row['tasks_per_s']:.1f}")
            if metrics is not None:
                metrics.add(row)
            if report is not None:
                report(row)
            window = _Window()
        out_of_time = (cfg.time_limit is not None and time.time() - start > cfg.time_limit) or \
            (cfg.stop_after is not None and step >= cfg.stop_after)
        out_of_time = _all_ranks(out_of_time, world_size, device, any_rank=True)  # ranks stop together
        if is_main and (step - last_save >= cfg.checkpoint_every or step == cfg.steps or out_of_time):
            save_state(state_path, net, opt, sched,
                       {**counters, "train_seconds": counters["train_seconds"] + time.time() - start,
                        "cpu_seconds": counters.get("cpu_seconds", 0.0) + time.process_time() - cpu_start}, cfg)
            plot_losses(out / "metrics.csv", out / "loss.png")
            last_save = step
        if out_of_time:
            logger.info(f"stopped at step {step} (time_limit {cfg.time_limit}s / stop_after {cfg.stop_after}); "
                        "rerun the command to resume")
            break
        t_wait = time.time()
    bar.close()
    counters["train_seconds"] += time.time() - start
    counters["cpu_seconds"] = counters.get("cpu_seconds", 0.0) + time.process_time() - cpu_start
    summary = training_record(cfg, net, counters, world_size, device)
    if is_main:
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
        if cfg.export:  # also when time_limit stopped the run: the record says how far it got
            save_checkpoint(net, cfg.export, metadata={"training": summary})
    return summary


def export_from_state(out_dir, path) -> Dict:
    """Write a TabSwift checkpoint from a run's latest ``state.pt`` (e.g. while the run continues)."""
    out = Path(out_dir)
    cfg = PretrainConfig.from_dict(json.loads((out / "config.json").read_text()))
    state = load_state(out / STATE_FILE, cfg)
    net = TabSwiftNetwork(run_network_config(cfg))
    net.load_state_dict(state["model"])
    counters = state["counters"]
    summary = training_record(cfg, net, counters, 1, torch.device("cpu"))
    save_checkpoint(net, path, metadata={"training": summary})
    return summary


def training_record(cfg: PretrainConfig, net: TabSwiftNetwork, counters: Dict, world_size: int, device) -> Dict:
    """What a reader needs to reproduce or extend the run."""
    hardware = (torch.cuda.get_device_name(device) if device.type == "cuda"
                else f"{platform.processor() or platform.machine()} CPU, {cfg.threads} torch thread(s)")
    return {"stage": cfg.stage, "steps_done": counters["step"], "steps_planned": cfg.steps,
            "skipped_steps": counters.get("skipped_steps", 0),
            "finished": counters["step"] >= cfg.steps, "tasks_seen": counters["tasks_seen"],
            "train_hours": round(counters["train_seconds"] / 3600, 3), "world_size": world_size,
            # CPU time of the training process (wall hours overstate compute on a shared machine)
            "train_cpu_hours": round(counters.get("cpu_seconds", 0.0) / 3600, 3),
            "hardware": hardware, "parameters": sum(p.numel() for p in net.parameters()),
            "network": net.config.to_dict(), "recipe": cfg.identity(), "torch": torch.__version__}


__all__ = ["build_network", "export_from_state", "load_state", "make_optimizer", "save_state", "set_trainable", "step_flops",
           "task_shape", "train"]
