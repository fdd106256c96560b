"""Memory a MAYA fit needs, estimated before the fit from the table's shape and the hyperparameters: host RAM
(AutoGluon's memory check, ``MayaModel._estimate_memory_usage_static``) and GPU memory (its VRAM check and the
sizing of parallel folds, ``MayaModel._estimate_gpu_memory_usage_static``).

The host terms were fitted to measured peak-RSS increases (docs/maya.md, "Memory").  The GPU estimate reuses the
same activation terms and adds the CUDA context, the weights with their optimizer state, and the training rows
moved to the device; no GPU was available to calibrate it, so it is the host formula's reading of the same
tensors, not a measurement.
"""

from __future__ import annotations

import sys
from typing import Dict

from ..common.ag_model import TORCH_IMPORT_BYTES, param_value
from .defaults import AUTO_BATCH_ROWS, resolve_defaults
from .members import PARALLEL_MAX_ACTIVATION_BYTES, parallel_wanted

FIT_OVERHEAD_BYTES = 140 * 2**20  # measured: 120-150 MiB for small one-block fits
#: (query chunk, context rows) float blocks alive at once when IAIL reads the context at inference: the
#: similarities and their softmax (network.IAILBlock.forward)
INFERENCE_BLOCKS = 2


def embedding_bytes(option, n_num: int, hidden: int, rows: int, batch: int) -> int:
    """What a numeric embedding (``num_embeddings``) adds to a fit's peak: its parameters four times (weights,
    gradients, Adam's two moments) and its largest activations.  PLR's encoding of a chunk of ``rows`` rows holds
    the 48 frequencies' products and their cosines and sines (3 x 48 floats per feature), and sets the peak; the
    piecewise embedding's bin encoding (48 floats per feature) counts as kept for the backward pass of a training
    batch of ``batch`` rows (~3 copies).  Calibrated on measured peaks (docs/maya.md, "Memory")."""
    if option is None or not n_num:
        return 0
    from .network import PIECEWISE_BINS

    k = PIECEWISE_BINS  # also the library's default count of PLR frequencies
    if option == "periodic":
        return 16 * n_num * (k + 2 * k * hidden + hidden) + 4 * rows * n_num * 3 * k
    return 16 * n_num * (k * hidden + 2 * hidden) + 4 * 3 * batch * n_num * k


def activation_bytes(batch: int, n_features: int, hidden: int, layers: int, branches: int) -> int:
    """Training activations of one batch, forward and backward, branch-stacked: each MBA block keeps ~12
    (batch, tokens, hidden) float tensors per branch (attention, FFN, norms), and autograd ~3x that."""
    return 4 * batch * (n_features + 1) * hidden * layers * branches * 12 * 3

#: the CUDA context and the caching allocator's first pools, on the device before any tensor of the fit
CUDA_CONTEXT_BYTES = 512 * 2 ** 20
#: weight-sized tensors on the device while training: the weights, their gradients, AdamW's two moments, the best
#: epoch's copy and the weight average
WEIGHT_COPIES = 6


def _settings(X, hyperparameters, problem_type: str) -> Dict:
    hyperparameters = hyperparameters or {}
    table = resolve_defaults(problem_type, param_value(hyperparameters, "recipe")
                             if "recipe" in hyperparameters else "default")
    return {k: param_value(hyperparameters, k) if k in hyperparameters else v for k, v in table.items()}


def estimate_terms(X, hyperparameters, problem_type: str) -> Dict[str, float]:
    """The terms both estimates share, in bytes: ``network`` (activations, numeric embedding, two members at once),
    ``small`` (data copies, the inference similarity block and the context buffers), ``params`` (the network's
    float32 weights, one member)."""
    from .schedule import effective_batch_size

    hp = _settings(X, hyperparameters, problem_type)
    n, f = len(X), max(1, X.shape[1])
    b = effective_batch_size(hp["batch_size"], n, AUTO_BATCH_ROWS[problem_type])
    d, L, br = int(hp["hidden_size"]), int(hp["num_layers"]), int(hp["num_branch"])
    per_row = 4 * (f + 1) * d * br  # one branch-stacked token tensor of one row, float32
    chunk = per_row * min(1024, n)
    network = 0.8 * chunk if L == 1 else 13 * chunk + 20 * (L - 1) * per_row * b
    if hp.get("num_embeddings") is not None:
        from ..common.preprocessing import numeric_width

        network += embedding_bytes(hp["num_embeddings"], numeric_width(X), d, min(1024, n), b)
    if parallel_wanted(hp["parallel_members"]) > 1 \
            and activation_bytes(b, f, d, L, br) <= PARALLEL_MAX_ACTIVATION_BYTES:
        network *= 2  # two members may train at once
    # data copies of every row; the inference similarity blocks and the context's buffers (a key projection
    # per IAIL block, the label embeddings, the encodings) hold the context rows only (max_context_rows)
    ctx = n if hp.get("max_context_rows") is None else min(n, int(hp["max_context_rows"]))
    decoders = int(hp["num_decoder_layers"])
    small = 4 * n * f * 6 + 4 * INFERENCE_BLOCKS * min(1 << 26, 1024 * ctx) + 4 * ctx * d * (decoders + 2)
    # per MBA block and branch: q/k/v/out projections and a 2x feed-forward (~12 d^2), the decoder alike, the
    # feature tokens' embeddings
    params = 4 * (12 * d * d * (L * br + decoders) + (f + 1) * d * 2)
    return {"network": network, "small": int(small), "params": int(params), "rows_on_device": 4 * n * f * 2}


def estimate_fit_memory(X, hyperparameters=None, problem_type: str = "binary") -> int:
    """Peak host RAM a fit adds to the process.  Fitted to measured peak-RSS increases (binary, 300-4,000
        rows, 20-520 features, 1-3 MBA blocks, batch 32-512; the estimate is 1.1-1.6x each): a fixed part
        (torch's thread pools and allocator, the encoder), and with more than one block the first block's full
        attention and FFN over every token, which peaks in the eval-mode encoding of a 1,024-row context chunk
        and accumulates over the blocks of a training batch (autograd).  A one-block encoder computes only the
        [CLS] row.  A numeric embedding adds its parameters and its encoding of a chunk (``embedding_bytes``).
        Two members training at once double the network's part; torch's first import adds its own.  The
        inference context (every row, or ``max_context_rows``) sets the similarity block and the context buffers."""
    t = estimate_terms(X, hyperparameters, problem_type)
    return int(1.25 * (FIT_OVERHEAD_BYTES + t["network"]) + t["small"]
               + (0 if "torch" in sys.modules else TORCH_IMPORT_BYTES))


def estimate_gpu_memory(X, hyperparameters=None, problem_type: str = "binary") -> int:
    """Device bytes of a fit on a GPU: the CUDA context, the weights x ``WEIGHT_COPIES``, the training activations
    and the inference block as on the host (float32: bf16 autocast only lowers them), the training rows."""
    t = estimate_terms(X, hyperparameters, problem_type)
    return int(CUDA_CONTEXT_BYTES + WEIGHT_COPIES * t["params"] + 1.25 * t["network"] + t["small"]
               + t["rows_on_device"])
