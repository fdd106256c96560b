"""What both AutoGluon wrappers (MAYA, TabSwift) do the same way around torch."""

from __future__ import annotations

import contextlib
import io
import threading
from typing import Any, Dict, Optional, Tuple

_STORAGE_PATCH = threading.RLock()


@contextlib.contextmanager
def storages_restored_on_cpu():
    """While active, unpickled torch storages land on the CPU whatever device they were saved from."""
    import torch
    import torch.storage

    def load_on_cpu(blob: bytes):
        return torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)

    with _STORAGE_PATCH:
        real = torch.storage._load_from_bytes
        torch.storage._load_from_bytes = load_on_cpu
        try:
            yield
        finally:
            torch.storage._load_from_bytes = real


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

    @classmethod
    def load(cls, path: str, reset_paths: bool = True, verbose: bool = True):
        """AutoGluon's load, with every torch storage in the pickle restored on the CPU when this machine
        has no CUDA device.

        A model fitted on a GPU is moved to the CPU before saving, but a tensor the move does not reach
        (a cached state, a buffer kept outside the modules) would be pickled with its ``cuda:0`` location,
        and plain unpickling then fails on a CPU-only machine ("Attempting to deserialize object on a CUDA
        device").  Torch pickles a storage as ``torch.storage._load_from_bytes(bytes)``; during this load
        that function is replaced by one that maps it to the CPU, weights only."""
        import torch

        if torch.cuda.is_available():
            return super().load(path=path, reset_paths=reset_paths, verbose=verbose)
        with storages_restored_on_cpu():
            return super().load(path=path, reset_paths=reset_paths, verbose=verbose)

    def _get_child_num_cpus(self) -> Optional[int]:
        """Threads for predict: those the fit was given (AutoGluon asserts global torch state is unchanged)."""
        n = getattr(self, "fit_num_cpus_child", None) or getattr(self, "fit_num_cpus", None)
        return int(n) if n else None


def param_value(params: Dict[str, Any], key: str):
    """A hyperparameter's value, or the default of a search space given in its place (memory estimates
    are asked for before HPO has picked a value)."""
    v = params[key]
    return v.default if hasattr(v, "default") else v
