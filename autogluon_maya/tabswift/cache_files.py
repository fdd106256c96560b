"""The members' context caches a saved TabSwift model carries (``disk_cache_mb``).

AutoGluon loads a model from disk for every predict call unless the predictor is persisted; without saved
caches each such call would encode every member's context again (a full pass of the network over the context
rows, TabSwift paper Sec. 3.2: the context's keys and values are computed once and reused by every query).
The file holds float16 block inputs (``engine.ContextCache.block_inputs``), from which the keys and values are
rebuilt at load, with the sha256 of the weights they were encoded with and the fit's token: caches of other
weights or another fit are never used.
"""

from __future__ import annotations

import json
from pathlib import Path

from .fit_context import FitContext, logger

CACHES_NAME = "tabswift_context_caches.safetensors"


def warm_caches(ctx: FitContext) -> int:
    """A fit without validation rows (a refit) encodes its members' contexts before it is saved, so that the saved
    model carries them; member by member, none started once the next is due to end past the time budget.  With
    validation rows AutoGluon's own prediction of them (the score, or a fold's out-of-fold rows) encodes them
    before the save.  Returns the members encoded here."""
    from ..common.training import torch_threads

    ens, budget = ctx.ensemble, ctx.budget
    if ctx.plan.has_val or ens.network is None or float(ctx.params["disk_cache_mb"]) <= 0:
        return 0
    end = None if budget.limit is None else budget.start + budget.limit
    with torch_threads(ctx.threads):
        return ens.warm(deadline=end, clock=budget.clock)


def save_caches(ens, path: Path, weights_name: str) -> int:
    """Write the members' context caches (``export_caches``, at most ``disk_cache_mb``: the ensemble's
    ``keep_inputs_bytes``) beside the weights ``path / weights_name``, with the weights' sha256; remove a stale
    file where none is kept.  Returns how many caches were written."""
    from safetensors.torch import save_file

    from .checkpoints_io.format import _publish, _temporary, read_checkpoint_info

    target = path / CACHES_NAME
    tensors, records = ens.export_caches(getattr(ens, "keep_inputs_bytes", 0))
    if not records:
        target.unlink(missing_ok=True)
        return 0
    sha = read_checkpoint_info(path / weights_name)["sha256"]
    tmp = _temporary(target)
    try:
        save_file(tensors, str(tmp), metadata={"caches": json.dumps(records), "weights_sha256": sha,
                                               "fit_token": str(getattr(ens, "fit_token_", ""))})
        _publish(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return len(records)


def load_caches(ens, path: Path, weights_name: str) -> int:
    """Restore the caches ``save_caches`` wrote, if they belong to the weights just loaded and to this fit's
    context (a token the ensemble draws at fit, saved on both sides); returns how many.  A file that cannot be
    used costs speed, never a prediction: its caches are encoded again on first use."""
    from safetensors import safe_open

    from .checkpoints_io.format import read_checkpoint_info

    source = path / CACHES_NAME
    if not source.is_file():
        return 0
    try:
        with safe_open(str(source), framework="pt", device="cpu") as f:
            meta = f.metadata() or {}
            if meta.get("weights_sha256") != read_checkpoint_info(path / weights_name)["sha256"] \
                    or not meta.get("fit_token") or meta["fit_token"] != getattr(ens, "fit_token_", None):
                logger.warning(f"TabSwift: context caches in {source} belong to other weights or another fit; "
                               f"not used")
                return 0
            tensors = {k: f.get_tensor(k) for k in f.keys()}
        return ens.import_caches(tensors, json.loads(meta["caches"]))
    except Exception as err:  # noqa: BLE001  (safetensors, JSON, a missing tensor: all mean "not usable")
        ens.clear_cache()
        logger.warning(f"TabSwift: context caches in {source} not used ({type(err).__name__}: {err}); they "
                       f"are encoded again on first use")
        return 0
