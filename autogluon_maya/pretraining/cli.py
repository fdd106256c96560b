"""``python -m autogluon_maya.pretraining`` / ``autogluon-maya-pretrain``: run or resume one stage.

Example (the shipped checkpoint's recipe; see README "TabSwift checkpoint"):
    autogluon-maya-pretrain --stage 1 --out-dir runs/small/stage1 --steps 6000 --export runs/small/stage1/ckpt
    autogluon-maya-pretrain --stage 3 --out-dir runs/small/stage3 --init-from runs/small/stage1/ckpt ...
Re-running a command after an interruption continues from ``<out-dir>/state.pt``.
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import fields
from typing import List, Optional

from .config import PretrainConfig


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="autogluon-maya-pretrain", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    types = {"int": int, "float": float, "str": str}
    for f in fields(PretrainConfig):
        name = "--" + f.name.replace("_", "-")
        kind = str(f.type).replace("Optional[", "").rstrip("]")
        p.add_argument(name, dest=f.name, type=types.get(kind, str), default=None,
                       help=f"default: {f.default!r}")
    p.add_argument("--ray-workers", type=int, default=0,
                   help="train with Ray Train on this many DDP ranks (0 = one process, no Ray)")
    p.add_argument("--gpu", action="store_true", help="with --ray-workers: one GPU per rank")
    return p.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    args = parse_args(argv)
    given = {f.name: getattr(args, f.name) for f in fields(PretrainConfig) if getattr(args, f.name) is not None}
    cfg = PretrainConfig(**given)
    if args.ray_workers:
        from .distributed import train_with_ray
        result = train_with_ray(cfg, args.ray_workers, use_gpu=args.gpu)
        print(result.metrics)
    else:
        from .trainer import train
        print(json.dumps(train(cfg), indent=2))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
