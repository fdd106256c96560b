"""Registration of the package's models in AutoGluon's model registry.

AutoGluon has no entry-point discovery: the keys ("MAYA", ...) exist only after
``import autogluon_maya``.  Registration is idempotent and survives ``importlib.reload``: a stale
class with the same module and name is replaced rather than rejected as a duplicate.
"""

from __future__ import annotations

from typing import Iterable


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
