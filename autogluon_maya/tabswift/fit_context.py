"""What one TabSwift fit decides before it starts (``FitPlan``) and what its steps share (``FitContext``).

A fit runs in steps (``TabSwiftModel._fit``): the weights, the plan, the context, the thread count, fine-tuning
(``fine_tune_policy``), the exit heads and τ (``early_exit``), the check against the prior and the record a refit
repeats (``refit_records``), and the context caches a saved model carries (``cache_files``).  The steps after the
context read and write one ``FitContext``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

#: every step reports through the model's logger, the one AutoGluon's verbosity and a user's handlers address
logger = logging.getLogger("autogluon.ext.autogluon_maya.tabswift.model")
FINE_TUNE_MODES = (True, False, "auto")


class FitPlan(NamedTuple):
    """What one TabSwift fit does (``make_plan``)."""
    task: str  # network.CLASSIFICATION or network.REGRESSION
    has_val: bool  # validation rows given: decisions are made on them
    mode: object  # fine-tuning: True, False or "auto"
    tau: object  # the early exit asked for: None, "auto" or a threshold
    wants_exit: bool  # exit heads are worth training (an explicit τ, or "auto" with validation rows)
    headless: bool  # the checkpoint has no exit heads
    prior_share: Optional[float]  # a refit: the share of the fits it replaces that fell back to the prior
    prior_basis: str  # what that share was taken over
    prior_refit: bool  # a refit repeating a fall-back to the prior

    @property
    def trains(self) -> bool:
        """The fit will train something (the backbone, or exit heads on a checkpoint without any)."""
        return (self.mode is True) or (self.mode == "auto" and self.has_val) or (self.wants_exit and self.headless)


def fine_tune_mode(value) -> object:
    """``fine_tune`` as True, False or "auto" (None, "none", 0 and numpy bools read as their truth value)."""
    mode = value
    if isinstance(mode, str) or mode is None:  # None: False, as before "auto" existed
        mode = {"auto": "auto", "true": True, "false": False, "none": False}.get(str(mode).lower(), mode)
    if mode not in FINE_TUNE_MODES:
        raise ValueError(f"TabSwift fine_tune must be True, False or 'auto', got {value!r}")
    return mode if mode == "auto" else bool(mode)


def make_plan(p: Dict, classification: bool, has_val: bool, headless: bool,
              prior: Tuple[Optional[float], str]) -> FitPlan:
    """What a fit will do, from its settings and data: the fine-tuning mode, the τ asked for, and for a refit (no
    validation rows) whether it repeats a fall-back to the prior (``prior``: the share of the fits it replaces
    that fell back and what it was taken over; then nothing is fine-tuned and nothing exits early).  Exit heads
    are worth training only if early exit can be used: an explicit τ, or "auto" with validation rows to choose
    it on."""
    from .network import CLASSIFICATION, REGRESSION

    mode = fine_tune_mode(p["fine_tune"])
    share, basis = prior
    prior_refit = share is not None and share > 0.5
    tau = None if prior_refit else p["tau"]
    return FitPlan(task=CLASSIFICATION if classification else REGRESSION, has_val=has_val,
                   mode=False if prior_refit else mode, tau=tau,
                   wants_exit=tau is not None and (tau != "auto" or has_val), headless=headless,
                   prior_share=share, prior_basis=basis, prior_refit=prior_refit)


@dataclass
class FitContext:
    """The state one fit's steps share once its context is built."""
    params: Dict[str, Any]  # the model's hyperparameters
    plan: FitPlan
    ensemble: Any  # the TabSwiftEnsemble being fitted
    budget: Any  # common.training.TimeBudget of the fit
    time_limit: Optional[float]
    seed: int
    summary: Dict[str, Any]  # what the fit reports (get_info) and what its later steps read
    metric_name: str = ""  # the stopping metric's name, for the records
    threads: int = 1  # torch threads of the fit's validation passes
    first_step: float = 0.0  # expected seconds of the first training step (before one was timed)
    score_fn: Optional[Callable[[], float]] = None  # the whole ensemble's validation score as it now predicts
    y_val: Any = None  # the validation labels (numpy)
    refit: Any = None  # a refit: the record of the fit it replaces (refit_records.TabSwiftRefitRecord); else None

    def deadline(self, share: float) -> Optional[float]:
        """The moment ``share`` of the time limit is spent (None without a limit), on the budget's clock."""
        return None if self.time_limit is None else self.budget.start + share * self.time_limit
