"""TabSwift: pretrained in-context network (``network``), its size presets (``config``) and the
cached, early-exiting inference engine (``engine``).  Pure torch; the AutoGluon model lives elsewhere.

The torch parts (``engine``, ``network``) load when one of their names is first used (PEP 562): importing the
AutoGluon model, a module of this package, runs this file, and ``import autogluon_maya`` must not import torch.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING

from .config import RELEASED, SMALL, TINY, TabSwiftConfig

_LAZY = {"ContextCache": "engine", "EnginePrediction": "engine", "TabSwiftEngine": "engine",
         "CLASSIFICATION": "network", "REGRESSION": "network", "TabSwiftNetwork": "network",
         "TabSwiftOutput": "network"}

if TYPE_CHECKING:
    from .engine import ContextCache, EnginePrediction, TabSwiftEngine
    from .network import CLASSIFICATION, REGRESSION, TabSwiftNetwork, TabSwiftOutput


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups find it without this hook
    return value


def __dir__():
    return sorted({*globals(), *_LAZY})


__all__ = ["CLASSIFICATION", "REGRESSION", "RELEASED", "SMALL", "TINY", "ContextCache", "EnginePrediction",
           "TabSwiftConfig", "TabSwiftEngine", "TabSwiftNetwork", "TabSwiftOutput"]
