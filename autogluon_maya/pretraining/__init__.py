"""TabSwift pretraining on synthetic tasks: data (``data``, ``targets``), objectives
(``losses``), the resumable loop (``trainer``), Ray Train DDP (``distributed``) and the CLI (``cli``)."""

from .config import MODEL_PRESETS, PretrainConfig
from .trainer import train

__all__ = ["MODEL_PRESETS", "PretrainConfig", "train"]
