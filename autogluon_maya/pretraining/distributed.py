"""Multi-GPU / multi-node pretraining through Ray Train (``TorchTrainer``, DDP) -- no home-made
distribution.  Each rank runs ``trainer.train`` on its own share of the batch indices
(``step * world_size + rank``), so the global batch is ``batch_size * world_size`` tasks per step.

Checkpoints: rank 0 writes ``<out_dir>/state.pt`` exactly as a single-process run does, so
``out_dir`` must be on storage every node sees (one node: any local path).  A restarted job resumes
from it.
"""

from __future__ import annotations

from typing import Dict

from .config import PretrainConfig


def _worker_loop(config: Dict) -> None:
    import ray.train
    import ray.train.torch

    from .trainer import train

    ctx = ray.train.get_context()
    train(PretrainConfig.from_dict(config), rank=ctx.get_world_rank(), world_size=ctx.get_world_size(),
          wrap_model=ray.train.torch.prepare_model, report=ray.train.report, progress=False)


def train_with_ray(cfg: PretrainConfig, num_workers: int, use_gpu: bool = False,
                   cpus_per_worker: int = 1):
    """Launch ``num_workers`` DDP ranks (gloo on CPU, NCCL on GPU); returns Ray's ``Result``."""
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    trainer = TorchTrainer(
        _worker_loop, train_loop_config=cfg.to_dict(),
        scaling_config=ScalingConfig(num_workers=num_workers, use_gpu=use_gpu,
                                     resources_per_worker={"CPU": cpus_per_worker + cfg.num_workers}),
        run_config=RunConfig(name=f"tabswift_stage{cfg.stage}"))
    return trainer.fit()


__all__ = ["train_with_ray"]
