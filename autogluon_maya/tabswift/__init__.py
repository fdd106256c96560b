"""TabSwift: pretrained in-context network (``network``), its size presets (``config``) and the
cached, early-exiting inference engine (``engine``).  Pure torch; the AutoGluon model lives elsewhere."""

from .config import RELEASED, SMALL, TINY, TabSwiftConfig
from .engine import ContextCache, EnginePrediction, TabSwiftEngine
from .network import CLASSIFICATION, REGRESSION, TabSwiftNetwork, TabSwiftOutput

__all__ = ["CLASSIFICATION", "REGRESSION", "RELEASED", "SMALL", "TINY", "ContextCache", "EnginePrediction",
           "TabSwiftConfig", "TabSwiftEngine", "TabSwiftNetwork", "TabSwiftOutput"]
