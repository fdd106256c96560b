"""What both AutoGluon wrappers (MAYA, TabSwift) do the same way around torch."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple


class TorchPluginMixin:
    """Mixed into ``AbstractTorchModel`` subclasses that declare ``seed_name``."""

    def _start_torch_fit(self, params: Dict[str, Any], num_cpus: int, num_gpus: float) -> Tuple[int, Any]:
        """Seed torch from AutoGluon's seed in ``params``, set the thread count (restored afterwards by
        the ``reset_torch_threads`` tag) and resolve the fit device; returns (seed, torch.device)."""
        import torch

        seed = int(params.get(self.seed_name, 0) or 0)
        torch.manual_seed(seed)
        torch.set_num_threads(max(1, int(num_cpus)))
        return seed, torch.device(self._resolve_fit_device(num_gpus=num_gpus))

    def _get_child_num_cpus(self) -> Optional[int]:
        """Threads for predict: those the fit was given (AutoGluon asserts global torch state is unchanged)."""
        n = getattr(self, "fit_num_cpus_child", None) or getattr(self, "fit_num_cpus", None)
        return int(n) if n else None


def param_value(params: Dict[str, Any], key: str):
    """A hyperparameter's value, or the default of a search space given in its place (memory estimates
    are asked for before HPO has picked a value)."""
    v = params[key]
    return v.default if hasattr(v, "default") else v
