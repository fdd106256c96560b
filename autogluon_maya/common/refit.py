"""What a refit repeats of the fit it replaces: one record type and one pair of functions for both models.

A refit (AutoGluon's ``refit_full``, a bag's all-rows model) has no validation rows, so it repeats the decisions of
the fit it replaces.  AutoGluon hands it that fit's ``params_trained`` as hyperparameters; a bag first combines its
folds' ``params_trained`` key by key over the first fold's keys (``BaggedEnsembleModel._get_compressed_params``:
bools by majority, ints by their rounded mean, floats by their mean, anything else by majority).  So a record is
written as flat scalar keys, each named ``refit_<field>``; a tuple field is written one key per slot,
``refit_<field>_<1-based slot>``, so each slot is averaged on its own.  Every fold must write every key, with the
same type, for the combination to hold.

``read_refit_record`` pops every refit key out of the hyperparameters before a model checks its settings, so a
refit key never reaches a setting check, and a ``refit_`` key the record does not know is an error.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Optional, Type, TypeVar

REFIT_PREFIX = "refit_"
_SCALARS = (bool, int, float, str)

R = TypeVar("R", bound="RefitRecord")


@dataclasses.dataclass(frozen=True)
class RefitRecord:
    """Base of a model's record: a frozen dataclass whose fields are scalars (bool, int, float, str), None where
    not recorded, or tuples of such scalars.  ``legacy_keys`` maps the names an earlier version wrote to fields
    (a name ending in ``_`` is the prefix of a tuple field's numbered slots), so a model saved by it refits."""

    legacy_keys: ClassVar[Mapping[str, str]] = {}


def refit_keys(record: RefitRecord) -> Dict[str, Any]:
    """The flat ``params_trained`` keys of ``record`` (``write_refit_record`` writes them)."""
    out = {}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        values = value if isinstance(value, tuple) else None
        for key, v in ([(f"{REFIT_PREFIX}{f.name}_{i + 1}", v) for i, v in enumerate(values)] if values is not None
                       else [(f"{REFIT_PREFIX}{f.name}", value)]):
            if not isinstance(v, _SCALARS):
                raise TypeError(f"refit record value {key}={v!r} is not a bool, int, float or str: a bag's "
                                f"combination of its folds' records would not average it")
            out[key] = v
    return out


def write_refit_record(params_trained: Dict[str, Any], record: RefitRecord) -> None:
    """Writes ``record`` into ``params_trained`` as flat ``refit_`` keys (module docstring)."""
    params_trained.update(refit_keys(record))


def _field_of(key: str, names, legacy: Mapping[str, str]):
    """(field, slot or None) that ``key`` holds, or None where it is no refit key."""
    if key.startswith(REFIT_PREFIX):
        rest = key[len(REFIT_PREFIX):]
        if rest in names:
            return rest, None
        head, _, slot = rest.rpartition("_")
        if head in names and slot.isdigit():
            return head, int(slot)
        raise ValueError(f"unknown refit key {key!r}; the refit keys are {REFIT_PREFIX} + one of {sorted(names)}")
    if key in legacy:
        return legacy[key], None
    for prefix, name in legacy.items():
        if prefix.endswith("_") and key.startswith(prefix) and key[len(prefix):].isdigit():
            return name, int(key[len(prefix):])
    return None


def read_refit_record(params: Dict[str, Any], record_type: Type[R]) -> Optional[R]:
    """Pops every refit key (and every name in ``record_type.legacy_keys``) out of ``params``; returns the record
    they hold, or None where they hold none (a fit that is no refit).  A field without a key is None; a tuple
    field holds its slots 1..the highest given, None in a slot not given; a key whose value is None counts as not
    given (the defaults an earlier version kept among the settings)."""
    names = {f.name for f in dataclasses.fields(record_type)}
    values: Dict[str, Any] = {}
    slots: Dict[str, Dict[int, Any]] = {}
    for key in [k for k in params if isinstance(k, str)]:
        where = _field_of(key, names, record_type.legacy_keys)
        if where is None:
            continue
        value = params.pop(key)
        if value is None:
            continue
        name, slot = where
        if slot is None:
            values[name] = value
        else:
            slots.setdefault(name, {})[slot] = value
    for name, given in slots.items():
        values[name] = tuple(given.get(i) for i in range(1, max(given) + 1))
    if not values:
        return None
    return record_type(**{**{n: None for n in names}, **values})
