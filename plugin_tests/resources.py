"""Fitting a model class directly on a given number of cores, and checking that it got them.

AutoGluon honours ``num_cpus`` passed to ``AbstractModel.fit`` only together with ``num_gpus``; alone it
is replaced in ``_calculate_total_resources`` by the model's default, every physical core (both models
set ``default_resources_physical_cores_only``). A test that says "one core" must pass both and look at
what the model's ``_fit`` received and the torch thread count it ran with.
"""

from __future__ import annotations

import torch


def fit_on_cores(model, cores: int = 1, **fit_kw):
    """``model.fit(num_cpus=cores, num_gpus=0, **fit_kw)``; asserts that ``_fit`` was called with
    ``num_cpus=cores`` and ended with ``cores`` torch threads (AutoGluon restores the caller's count
    after the fit, so it is read inside)."""
    seen = {}
    fit = model._fit

    def spy(*args, **kwargs):
        seen["num_cpus"] = kwargs.get("num_cpus")
        try:
            return fit(*args, **kwargs)
        finally:
            seen["threads"] = torch.get_num_threads()

    model._fit = spy  # an instance attribute, shadowing the method for this call only
    try:
        model.fit(num_cpus=cores, num_gpus=0, **fit_kw)
    finally:
        del model._fit
    assert seen == {"num_cpus": cores, "threads": cores}, f"{type(model).__name__} was given {seen}, not {cores} core(s)"
    assert model.fit_num_cpus == cores
    return model


def pickle_as_if_on_cuda(obj) -> tuple:
    """``pickle.dumps(obj)`` with every torch storage recorded as living on ``cuda:0`` -- the bytes a GPU
    process writes for a CUDA tensor -- and the number of storages written.  No GPU is needed: torch
    pickles a storage as ``torch.save`` bytes whose location comes from ``torch.serialization.location_tag``.
    Used by the reload test and by ``examples/benchmarks/gpu_check.py``'s CPU mode."""
    import pickle

    import torch.serialization

    real, count = torch.serialization.location_tag, [0]

    def on_cuda(storage):
        count[0] += 1
        return "cuda:0"

    torch.serialization.location_tag = on_cuda
    try:
        return pickle.dumps(obj), count[0]
    finally:
        torch.serialization.location_tag = real
