"""Registration of the package's models in AutoGluon's model registry.

AutoGluon has no entry-point discovery: the keys ("MAYA", ...) exist only after
``import autogluon_maya``.  Registration is idempotent and survives ``importlib.reload``: a stale
class with the same module and name is replaced rather than rejected as a duplicate.

Fresh worker processes (dynamic stacking)
-----------------------------------------
The registry is per process.  With ``dynamic_stacking=True`` (the default of the best/high/good
presets) ``TabularPredictor._sub_fit_memory_save_wrapper`` runs the DyStack sub-fit as
``ray.remote(max_calls=1)(_dystack)`` in a fresh Ray worker.  The worker receives only the predictor,
the data and ``ag_fit_kwargs`` (whose ``hyperparameters`` hold the plain string ``"MAYA"``), unpickles
``_dystack`` by reference from ``autogluon.tabular.predictor.predictor`` and calls it; ``_dystack`` ->
``predictor._fit`` -> trainer -> ``clean_model_cfg`` (``trainer/model_presets/presets.py``) then looks
the key up in *that* process's ``ag_model_registry``, where it was never registered.  AutoGluon catches
the ``AssertionError("Unknown model type ... 'MAYA'")``, logs it and discards the whole sub-fit, so
DyStack decides ``num_stack_levels`` without having fitted anything.

Bagged fold fits are not affected: ``ParallelLocalFoldFittingStrategy`` and AutoGluon's parallel model
fitting ship already-constructed model objects to their Ray workers; unpickling a ``MayaModel``
imports its module, hence the package, hence this registration.

Fix chosen: :func:`install_dystack_hook` (called from :func:`register_models`) replaces the module
global ``autogluon.tabular.predictor.predictor._dystack`` by :func:`_dystack_with_registered_models`,
a thin pass-through defined *here*.  Ray/cloudpickle pickles an importable module-level function by
reference (module + qualified name), so the worker must ``import autogluon_maya._registry`` to obtain
the function, which runs ``autogluon_maya/__init__.py`` and registers every model of the package
(MAYA and TabSwift: :func:`register_package_models`) before AutoGluon resolves any key.
The wrapper also registers them itself, so the in-process path (``memory_safe_fits=False`` or no Ray)
behaves identically.

Why this and not the alternatives:

* Ray ``runtime_env={"worker_process_setup_hook": ...}`` is a job-level setting that only ``ray.init``
  accepts.  AutoGluon calls a bare ``ray.init()`` and skips it when Ray is already initialized (user
  cluster, earlier fit, notebooks), so we could set it only by calling ``ray.init`` ourselves at import
  time, which would be wrong for everybody else.  Rejected.
* Making something the worker necessarily receives import us on unpickling: with string keys nothing
  in the payload (predictor, learner, ``ag_fit_kwargs``, data) is ours; the only objects we could reach
  are AutoGluon's own (``TabularPredictor`` via ``copyreg``, the learner class, ...), and changing their
  pickling would also change ``predictor.save()`` files, making every predictor saved in a process that
  imported this package unloadable without it.  Rejected.
* The function Ray ships *is* the one thing the worker necessarily unpickles, so making that function
  ours is the narrowest hook with the payload-import property: one private module global, replaced by a
  pass-through with an identical call contract.  It does not depend on who initialized Ray or how, and
  costs nothing when DyStack is off.

Safeguards: installed only on AutoGluon 1.x when ``_dystack`` exists with the parameters this module
passes through and ``TabularPredictor._sub_fit_memory_save_wrapper`` still refers to the global name
``_dystack`` (otherwise a ``RuntimeWarning`` points to the class-key workaround); idempotent (a repeat
call, another ``register_models`` call or ``importlib.reload`` never stacks a second wrapper of ours);
the wrapper deliberately does *not* copy ``__module__``/``__qualname__`` from the original (as
``functools.wraps`` would), because then cloudpickle would resolve it by reference to AutoGluon's
module and the worker would get the unpatched original again.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable, Iterable

_AG_PREDICTOR_MODULE = "autogluon.tabular.predictor.predictor"
_DYSTACK_PARAMS = ("predictor", "train_data", "time_limit", "ds_fit_kwargs", "ag_fit_kwargs", "ag_post_fit_kwargs",
                   "holdout_data")
_HOOK_MARK = "_autogluon_maya_dystack_hook"

# AutoGluon's own ``_dystack``, set by ``install_dystack_hook`` (in the worker too: unpickling the wrapper
# imports this package, whose ``register_models`` call installs the hook before the wrapper runs).
# ``globals().get``: survives ``importlib.reload``, so a wrapper installed before the reload keeps working.
_original_dystack: Callable[..., Any] | None = globals().get("_original_dystack")


def register_models(classes: Iterable[type]) -> None:
    from autogluon.tabular.registry import ag_model_registry

    for cls in classes:
        existing = ag_model_registry.key_to_cls_map().get(cls.ag_key)
        if existing is cls:
            continue
        if existing is not None:
            same = (existing.__module__, existing.__qualname__) == (cls.__module__, cls.__qualname__)
            if not same:
                raise ValueError(f"AutoGluon key {cls.ag_key!r} is already used by {existing.__module__}.{existing.__qualname__}")
            ag_model_registry.remove(existing)
        ag_model_registry.add(cls)
    install_dystack_hook()


def register_package_models() -> None:
    """Register every model of this package (MAYA and TabSwift): what ``import autogluon_maya`` does.

    Imports the model modules rather than the package, so that this module, which the package imports,
    imports nothing that imports it back."""
    from .maya.model import MayaModel
    from .tabswift.model import TabSwiftModel

    register_models([MayaModel, TabSwiftModel])


def _dystack_with_registered_models(*args, **kwargs):
    """Pass-through for AutoGluon's ``_dystack`` that guarantees this package's keys are registered.

    Runs in the DyStack Ray worker.  Obtaining this function there already imported the package (see
    the module docstring); registering here keeps that true however the function was obtained.
    """
    register_package_models()  # idempotent; installs the hook, which sets _original_dystack

    if _original_dystack is None:
        raise RuntimeError("autogluon_maya: AutoGluon's _dystack is unknown in this process; "
                           "pass the model class instead of its string key, or dynamic_stacking=False")
    return _original_dystack(*args, **kwargs)


setattr(_dystack_with_registered_models, _HOOK_MARK, True)


def _is_our_hook(fn: Any) -> bool:
    # By name, not identity: after ``importlib.reload`` the installed wrapper is a stale function object.
    return getattr(fn, _HOOK_MARK, False) and getattr(fn, "__module__", None) == __name__


def _unsupported(reason: str) -> bool:
    warnings.warn(
        f"autogluon_maya: cannot make the string keys available to AutoGluon's DyStack sub-fit ({reason}). "
        "With dynamic_stacking=True pass the model class as the key, e.g. "
        "hyperparameters={autogluon_maya.MayaModel: {...}}, or pass dynamic_stacking=False.",
        RuntimeWarning, stacklevel=3)
    return False


def install_dystack_hook() -> bool:
    """Route AutoGluon's DyStack sub-fit through :func:`_dystack_with_registered_models`.

    Returns True when the hook is in place.  Narrow (one private module global), checked against the
    installed AutoGluon, idempotent; see the module docstring for why this approach.
    """
    global _original_dystack
    import importlib

    import autogluon.tabular as ag_tabular

    version = str(getattr(ag_tabular, "__version__", "?"))
    if version.split(".")[0] != "1":
        return _unsupported(f"untested AutoGluon version {version}")
    ag_predictor = importlib.import_module(_AG_PREDICTOR_MODULE)
    current = getattr(ag_predictor, "_dystack", None)

    chain, fn = [], current
    while callable(fn) and len(chain) < 32:
        chain.append(fn)
        fn = getattr(fn, "__wrapped__", None)
    if _original_dystack is not None and any(_is_our_hook(f) for f in chain):
        if _is_our_hook(current) and current is not _dystack_with_registered_models:  # stale after a reload
            _dystack_with_registered_models.__wrapped__ = current.__wrapped__
            ag_predictor._dystack = _dystack_with_registered_models
        return True  # already installed (never stack a second wrapper of ours: it would call itself)

    if not callable(current):
        return _unsupported(f"{_AG_PREDICTOR_MODULE}._dystack not found")
    try:
        params = tuple(inspect.signature(current).parameters)
    except (TypeError, ValueError):
        params = ()
    if params != _DYSTACK_PARAMS:
        return _unsupported(f"unexpected signature of _dystack: {params}")
    sub_fit_wrapper = getattr(getattr(ag_predictor, "TabularPredictor", None), "_sub_fit_memory_save_wrapper", None)
    if "_dystack" not in getattr(getattr(sub_fit_wrapper, "__code__", None), "co_names", ()):
        return _unsupported("TabularPredictor._sub_fit_memory_save_wrapper no longer calls _dystack")

    _original_dystack = current
    _dystack_with_registered_models.__wrapped__ = current  # introspection only; module/qualname stay ours
    ag_predictor._dystack = _dystack_with_registered_models
    return True
