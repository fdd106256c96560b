"""MAYA's settings: one table of defaults by problem type, the paper's recipe, and the check of every setting.

``DEFAULT_PARAMS`` holds a value or a ``ByType`` (binary, multiclass, regression, quantile) per setting; the model,
the search space and the memory estimate read it through ``resolve_defaults``, and the model hands the network its
settings so resolved.  ``recipe="paper"`` replaces the rows in ``PAPER``.  docs/maya.md: each setting's meaning,
the departures from the paper, the evidence.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, ClassVar, Dict, Mapping, NamedTuple, Optional, Tuple

from ..common.preprocessing import NUMERIC_TRANSFORMS
from ..common.refit import RefitRecord, read_refit_record

PROBLEM_TYPES = ("binary", "multiclass", "regression", "quantile")


ByType = NamedTuple("ByType", [(t, Any) for t in PROBLEM_TYPES])


def _cls_reg(classification, regression) -> ByType:
    return ByType(classification, classification, regression, regression)


DEFAULT_PARAMS: Dict[str, Any] = {
    # encoder: Table 12's ranges; width 64 and one MBA block are sized for 2 CPU cores
    "hidden_size": 64,
    "num_heads": 4,
    "num_branch": 2,  # Table 12: 2-8; 4 for classification validated no better on the decision tables
    "num_layers": 1,
    "intermediate_factor": 2.0,
    "dropout": 0.1,
    "add_act": False,
    "act_type": "relu",
    "if_bias": True,
    "use_branch_weights": True,  # False: plain mean of the branches (the paper's ablation, Table 3)
    "branch_momentum": 0.9,  # EMA of the branch weights (Eq. 8)
    # decoder
    "num_decoder_layers": 1,
    "decoder_intermediate_factor": 2.0,
    "decoder_act_type": "relu",
    "decoder_dropout": 0.1,
    "decoder_if_bias": True,
    "qk_shared_weights": False,
    # training
    "learning_rate": 1e-3,
    "weight_decay": 1e-5,
    "batch_size": "auto",  # AUTO_BATCH_ROWS, fewer on small tables; an int is used as given
    "recipe": "default",  # or "paper" (PAPER)
    "max_epochs": 200,
    "patience": 16,  # epochs without a better validation score; None: train to max_epochs
    "validation_every": "auto",  # epochs between validation passes (schedule.validation_cadence)
    "ema_epochs": _cls_reg(None, 5),  # horizon of a moving average of the weights scored beside them; None: off
    "ensemble_members": "auto",  # up to AUTO_MEMBERS networks while a time limit holds them (members.py)
    "parallel_members": 1,  # members one at a time; "auto" (CPU): the first two at once, one thread each
    "adaptive_threads": True,  # CPU: keep 1 or num_cpus threads, whichever steps faster
    # inference context (Eq. 14): N rows drawn once at fit (context.draw_context), so that prediction costs stop
    # growing with the training set; None attends over every training row (the paper's).  8,192 rows validated
    # level with the whole context on the five largest decision tables at full size (docs/maya.md)
    "max_context_rows": 8192,
    # preprocessing
    "numeric_transform": "quantile",  # the paper's; the others are options (common.preprocessing)
    "numeric_scale": 1.0,  # numeric token j = (s x_j) W_j + b_j
    # the numeric token: None is the paper's linear token (Eq. 1); "periodic" / "piecewise" are the embeddings of
    # Gorishniy et al. 2022 (network.FeatureTokenizer, NUM_EMBEDDINGS).  Piecewise for binary and regression,
    # the linear token for multiclass: chosen on validation scores (docs/maya.md, "Numeric embeddings")
    "num_embeddings": ByType("piecewise", None, "piecewise", "piecewise"),
}
# numeric tokens besides the paper's linear one: PLR (periodic -> linear -> ReLU) and piecewise-linear embeddings
# on quantile bins of the training rows (Gorishniy et al., "On Embeddings for Numerical Features in Tabular Deep
# Learning", NeurIPS 2022, sections 3.2-3.3)
NUM_EMBEDDINGS = ("periodic", "piecewise")
# what batch_size="auto" starts from, before a small table lowers it (schedule.effective_batch_size)
AUTO_BATCH_ROWS = _cls_reg(128, 256)._asdict()
# recipe="paper": one network trained as the paper does (Appendix B.2, Table 12; FT-Transformer's protocol, which
# it follows): quantile-normal inputs at scale 1, no weight average, every epoch validated, Table 12's smallest
# batch, every training row as the inference context (Eq. 14); the optimizer (a constant rate, weight decay on
# weight matrices only) is the paper's under either recipe.
PAPER: Dict[str, Any] = {"batch_size": 1024, "ensemble_members": 1, "parallel_members": 1, "ema_epochs": None,
                         "validation_every": 1, "numeric_transform": "quantile", "numeric_scale": 1.0,
                         "num_embeddings": None, "max_context_rows": None}
# The members a refit_full trains.  Given explicitly, REPLAY_KEY is [[seed, epochs], ...], replayed exactly
# (members.train_members).  A fit records its own as a ``MayaRefitRecord`` instead (common.refit: flat integer
# keys, because a bagged model's refit combines its folds' records key by key, integers by their rounded mean,
# and a list would pass through as fold 1's alone).
REPLAY_KEY = "member_replay"
MEMBER_SEED_STRIDE = 7919  # member i's seed: the fit's seed + i x this stride


@dataclasses.dataclass(frozen=True)
class MayaRefitRecord(RefitRecord):
    """What a MAYA refit repeats: ``refit_members``, the members the fit kept (0: it fell back to the prior), and
    ``refit_member_epochs_<slot>``, a best epoch count for each member slot (the most members the fit could train,
    the same in every fold of a bag)."""

    members: Optional[int] = None
    member_epochs: Optional[Tuple[Optional[int], ...]] = None

    legacy_keys: ClassVar[Mapping[str, str]] = {"member_replay_count": "members",
                                                "member_replay_epochs_": "member_epochs"}


def _rounded_mean(values) -> int:
    """The rounded mean of epoch counts, at least 1."""
    values = [int(v) for v in values]
    return max(1, int(round(sum(values) / len(values))))


def replay_record(kept_epochs, trained_epochs, slots: int) -> MayaRefitRecord:
    """A fit's record for refit_full: how many members it kept and, for each of ``slots`` member slots, a best
    epoch count.  Every slot is recorded even where the fit kept fewer members, since a bag's combination reads the
    keys of its first fold: a slot the fit did not fill gets the rounded mean of the counts it has (``kept_epochs``,
    or ``trained_epochs`` when nothing was kept), as every member is the same network from another seed and so has
    the same expected count."""
    fill = _rounded_mean([max(1, int(e)) for e in (kept_epochs or trained_epochs or [1])])
    epochs = [max(1, int(e)) for e in kept_epochs][:slots]
    epochs += [fill] * (slots - len(epochs))
    return MayaRefitRecord(members=len(kept_epochs), member_epochs=tuple(epochs))


def pop_replay(params: Dict[str, Any], seed: int):
    """Removes the replay settings from ``params`` (``REPLAY_KEY`` and the refit record, ``read_refit_record``);
    returns the members to replay as [[seed, epochs], ...], or None for a fit that is no replay.  An explicit
    ``REPLAY_KEY`` wins over a record.  From a record (one fit's, or a bag's folds' combined: count and each slot's
    epochs the rounded mean over the folds, the rule AutoGluon applies to every model's epoch and iteration
    counts), member i trains from the refit's seed + i x ``MEMBER_SEED_STRIDE`` for slot i's epochs: a seed carries
    nothing from a fold's rows to the refit's, and the folds' kept seeds need not agree (a fold that dropped member
    2 kept the third seed in slot 2)."""
    explicit = params.pop(REPLAY_KEY, None)
    record = read_refit_record(params, MayaRefitRecord)
    if explicit is not None:
        return [[int(s), int(e)] for s, e in explicit]
    if record is None or record.members is None:
        return None
    count = int(record.members)
    slots = {i + 1: e for i, e in enumerate(record.member_epochs or ()) if e is not None}
    if count < 0 or (count and not slots):
        raise ValueError(f"MAYA's refit_members={count} needs refit_member_epochs_1..{count}, got slots "
                         f"{sorted(slots)}")
    # a slot missing from the record (folds that could train different numbers of members: a bag combines
    # the keys of its first fold) gets the rounded mean of the slots recorded, as replay_record fills them
    fill = _rounded_mean(slots.values()) if slots else 1
    return [[seed + MEMBER_SEED_STRIDE * i, max(1, int(slots.get(i + 1, fill)))] for i in range(count)]


def resolve_defaults(problem_type: str, recipe: str = "default") -> Dict[str, Any]:
    """The table's values for one problem type and recipe."""
    if problem_type not in PROBLEM_TYPES:
        raise ValueError(f"MAYA supports the problem types {PROBLEM_TYPES}, got {problem_type!r}")
    if recipe not in ("default", "paper"):
        raise ValueError(f"recipe must be 'default' or 'paper', got {recipe!r}")
    i = PROBLEM_TYPES.index(problem_type)
    values = {k: v[i] if isinstance(v, ByType) else v for k, v in DEFAULT_PARAMS.items()}
    return {**values, **(PAPER if recipe == "paper" else {}), "recipe": recipe}


def _real(lo=-math.inf, hi=math.inf, lo_open=False, hi_open=False):
    def ok(v):
        return (isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
                and (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi))
    return ok


def _int(lo):
    return lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= lo


def _one_of(*choices):
    return lambda v: isinstance(v, (str, bool)) and v in choices


def _or(*tests):
    return lambda v: any(t(v) for t in tests)


_FLAG = ("True or False", _one_of(True, False))
# every setting: (what it takes, its test)
CHECKS = {
    **{k: ("an integer >= 1", _int(1)) for k in ("hidden_size", "num_heads", "num_branch", "num_layers",
                                                  "num_decoder_layers", "max_epochs")},
    **{k: ("a number > 0", _real(0, lo_open=True)) for k in ("intermediate_factor", "decoder_intermediate_factor",
                                                             "learning_rate", "numeric_scale")},
    **{k: ("a number in [0, 1)", _real(0, 1, hi_open=True)) for k in ("dropout", "decoder_dropout")},
    **{k: _FLAG for k in ("add_act", "if_bias", "use_branch_weights", "decoder_if_bias", "qk_shared_weights",
                          "adaptive_threads")},
    **{k: ("'relu' or 'prelu'", _one_of("relu", "prelu")) for k in ("act_type", "decoder_act_type")},
    "branch_momentum": ("a number in [0, 1]", _real(0, 1)),
    "weight_decay": ("a number >= 0", _real(0)),
    "batch_size": ("'auto' or an integer >= 2", _or(_one_of("auto"), _int(2))),
    "recipe": ("'default' or 'paper'", _one_of("default", "paper")),
    "patience": ("None or an integer >= 1", _or(lambda v: v is None, _int(1))),
    "validation_every": ("'auto' or an integer >= 1", _or(_one_of("auto"), _int(1))),
    "ema_epochs": ("None or a number > 0", _or(lambda v: v is None, _real(0, lo_open=True))),
    "max_context_rows": ("None or an integer >= 1", _or(lambda v: v is None, _int(1))),
    "ensemble_members": ("'auto' or an integer >= 1", _or(_one_of("auto"), _int(1))),
    "parallel_members": ("'auto' or an integer >= 1", _or(_one_of("auto"), _int(1))),
    "numeric_transform": ("one of " + ", ".join(NUMERIC_TRANSFORMS), _one_of(*NUMERIC_TRANSFORMS)),
    "num_embeddings": ("None, 'periodic' or 'piecewise'", _or(lambda v: v is None, _one_of(*NUM_EMBEDDINGS))),
}


def check_params(params: Dict[str, Any]) -> Dict[str, Any]:
    """Every setting checked at fit start: an unknown name or a bad value is an error naming it.  Returns the
    settings with numpy numbers (a search space's) made Python numbers; bool is no number."""
    unknown = sorted(set(params) - set(CHECKS))
    if unknown:
        raise ValueError(f"unknown MAYA setting(s) {unknown}; the settings are {sorted(CHECKS)} (docs/maya.md)")
    out = dict(params)
    for key, (takes, ok) in CHECKS.items():
        value = params[key]
        if hasattr(value, "item") and not isinstance(value, (str, bool)):  # numpy scalar
            value = value.item()
        if not ok(value):
            raise ValueError(f"MAYA setting {key} must be {takes}, got {value!r}")
        out[key] = value
    if out["recipe"] == "paper" and out["num_embeddings"] is not None:
        # the recipe's training settings can be overridden (docs/maya.md), but the numeric token is the model
        # itself: the paper's is linear (Eq. 1), so a paper fit with another token would not be the paper's MAYA
        raise ValueError(f"MAYA setting num_embeddings must be None with recipe='paper' (the paper's numeric token "
                         f"is linear, Eq. 1), got {out['num_embeddings']!r}; numeric embeddings need "
                         f"recipe='default'")
    return out
