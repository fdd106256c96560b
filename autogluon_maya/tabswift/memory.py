"""Memory a TabSwift fit and its predictions need, estimated before the fit from the table's shape, the
hyperparameters and the size of the checkpoint the fit will load (``checkpoints_io.info.network_dims``).

The terms (TabSwift paper Sec. 3.2: each member's context is encoded once; its keys and values per layer are
kept and every query attends to them, ``chunk_size`` queries at a time):
- the context K/V caches of every member: layers x (context rows + registers) x d x 8 bytes of float32 keys and
  values, plus 2 for the float16 block inputs where ``disk_cache_mb`` keeps them to save them; capped by
  ``cache_max_mb`` (``"auto"``: a share of the memory available now, ``cache_budget``);
- one attention block of ``chunk_size`` queries x context keys per head;
- where fine-tuning will run, its episodes' activations and attention maps kept for the backward pass;
  ``fine_tune="auto"`` counts only where validation rows are given (without them it stays zero-shot); a bag's
  static estimate does not see its folds' validation rows.
Host memory adds a measured fixed overhead, the preprocessed context copies and torch's import; GPU memory the
CUDA context, the weights (with fine-tuning: their gradients, Adam's two moments and the best and pretrained
copies fine-tuning keeps) and the context rows on the device.
"""

from __future__ import annotations

import sys
from typing import Dict

from .cache_budget import resolve_cache_mb
from .checkpoints_io.info import network_dims
from .defaults import DEFAULT_PARAMS

#: measured in a fresh process: what a zero-shot fit of the shipped checkpoint adds beyond its context
#: caches and attention blocks (the network, the preprocessing, torch's allocator pools)
FIT_OVERHEAD_BYTES = 50 * 2 ** 20
#: the CUDA context and the caching allocator's first pools, on the device before any tensor of the fit
CUDA_CONTEXT_BYTES = 512 * 2 ** 20
#: float32 parameters per block of width d, in units of d^2: qkv, gate and output projections (5), the x2
#: feed-forward (4), the layer's prediction and exit heads, embeddings and final heads shared out (12.2 for the
#: released network, 12.6 for the shipped one, counted from ``TabSwiftNetwork``)
PARAMS_PER_BLOCK_D2 = 12.6
#: weight-sized tensors on the device while fine-tuning: the weights, their gradients, Adam's two moments, the
#: best step's copy and the pretrained copy ``fine_tune="auto"`` may restore
FINE_TUNE_WEIGHT_COPIES = 6


def estimate_terms(X, hyperparameters: Dict, **kwargs) -> Dict[str, int]:
    """The terms both estimates share, in bytes, and the network's size (``layers``, ``d``, ``keys``)."""
    from ..common.ag_model import param_value

    hp = {**DEFAULT_PARAMS, **(hyperparameters or {})}

    def num(key):
        return param_value(hp, key)

    layers, d, heads, registers = network_dims(num("checkpoint_path"))
    ctx = min(len(X), int(num("max_context_rows")))
    keys = ctx + registers
    members = int(num("n_estimators"))
    f = min(max(1, X.shape[1]), 100)
    cache_mb, _ = resolve_cache_mb(num("cache_max_mb"), num("disk_cache_mb"), members=members, layers=layers,
                                   keys=keys, d=d, cache_sets=2 if int(kwargs.get("num_classes") or 0) > 10 else 1)
    saved = num("disk_cache_mb") == "auto" or float(num("disk_cache_mb")) > 0
    kept = 10 if saved else 8  # float32 keys + values (+ float16 block inputs)
    fine_tune, tune = num("fine_tune"), 0
    fine_tunes = fine_tune is True or (fine_tune == "auto" and kwargs.get("X_val") is not None)
    if fine_tunes:
        rows, episodes = int(num("fine_tune_rows")), int(num("fine_tune_episodes_per_step"))
        tune = episodes * layers * (heads * rows * rows * 4 * 2 + rows * d * 4 * 12)
    return {"layers": layers, "d": d, "keys": keys, "fine_tunes": int(fine_tunes),
            "data": 8 * ctx * f * 2 * 4, "context_rows": ctx * f * 4,
            "cache": int(min(cache_mb * 2 ** 20, members * kept * layers * keys * d)),
            "attention": heads * int(num("chunk_size")) * keys * 4 * 3, "tune": tune}


def estimate_fit_memory(X, hyperparameters: Dict = None, **kwargs) -> int:
    """Host bytes a fit and its predictions add (``TabSwiftModel._estimate_memory_usage_static``); torch's own
    import is added where it has not happened yet."""
    from ..common.ag_model import TORCH_IMPORT_BYTES

    t = estimate_terms(X, hyperparameters, **kwargs)
    torch_import = 0 if "torch" in sys.modules else TORCH_IMPORT_BYTES
    return int(FIT_OVERHEAD_BYTES + t["data"] + t["cache"] + t["attention"] + t["tune"] + torch_import)


def estimate_gpu_memory(X, hyperparameters: Dict = None, **kwargs) -> int:
    """Device bytes of a fit on a GPU and its predictions (``TabSwiftModel._estimate_gpu_memory_usage_static``):
    the CUDA context, the weights (x ``FINE_TUNE_WEIGHT_COPIES`` where it fine-tunes), the members' caches, one
    attention block, fine-tuning's activations and one member's context rows."""
    t = estimate_terms(X, hyperparameters, **kwargs)
    weights = int(PARAMS_PER_BLOCK_D2 * t["layers"] * t["d"] ** 2) * 4
    copies = FINE_TUNE_WEIGHT_COPIES if t["fine_tunes"] else 1
    return int(CUDA_CONTEXT_BYTES + copies * weights + t["cache"] + t["attention"] + t["tune"] + t["context_rows"])
