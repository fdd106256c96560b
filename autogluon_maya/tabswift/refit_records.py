"""The check against the prior and the record a refit repeats, as methods of ``TabSwiftModel`` (a mixin: they
read and write the model's ``params_trained``, ``_prior`` and ``model``).

A refit (``refit_full``, a bag's all-rows model) has no validation rows: it repeats the decisions of the fit it
replaces, which AutoGluon hands it as hyperparameters (that fit's ``params_trained``; a bag first combines its
folds' records key by key).  The record's keys and their combination: ``common.refit``.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Dict, Mapping, Optional, Tuple

import numpy as np

from ..common.refit import REFIT_PREFIX, RefitRecord, write_refit_record
from .fit_context import FitContext, logger

AUTO_CHOICES = {True: "fine_tune='auto' kept the fine-tuned weights on validation",
                False: "fine_tune='auto' kept the zero-shot weights"}


@dataclasses.dataclass(frozen=True)
class TabSwiftRefitRecord(RefitRecord):
    """What a TabSwift refit repeats besides the settings it runs with.  Those settings go into ``params_trained``
    under their own names, as AutoGluon's refits expect: ``checkpoint_path`` by the value that loads the same
    weights, ``fine_tune`` (True/False), ``fine_tune_steps`` (the step count kept) and ``tau`` (the τ in use).

    A bag averages each field over its folds (``common.refit``): ``fine_tune_share`` and ``prior_checked`` are the
    shares a refit divides by (``fine_tune_policy.replay_steps``, ``_prior_share_of_checked``).  The two texts
    depend on the outcome only, so the folds' majority on a text agrees with their majority on ``fine_tune``
    (ties: the first fold's)."""

    checkpoint_choice: Optional[str] = None  # why checkpoint_path="auto" (or the environment) chose the weights
    fine_tune_choice: Optional[str] = None  # the fine_tune="auto" decision's text ("" where fine_tune was given)
    fine_tune_seconds: Optional[float] = None  # how long fine-tuning ran (0.0 zero-shot): the replay's bound
    fine_tune_share: Optional[float] = None  # 1.0 if the fit kept fine-tuned weights, else 0.0
    fine_tune_horizon: Optional[int] = None  # the cosine's horizon the fine-tuning ran on
    prior_share: Optional[float] = None  # 1.0 if the fit fell back to the prior, else 0.0
    prior_checked: Optional[float] = None  # 1.0 if it compared itself with the prior, else 0.0 (no time to)

    legacy_keys: ClassVar[Mapping[str, str]] = {
        "checkpoint_chosen": "checkpoint_choice", "fine_tune_chosen": "fine_tune_choice",
        "fine_tune_seconds": "fine_tune_seconds", "fine_tune_share": "fine_tune_share",
        "fine_tune_schedule_steps": "fine_tune_horizon", "prior_share": "prior_share",
        "prior_checked": "prior_checked"}


#: the keys of the two texts in params_trained (a refit logs and reports what it repeats)
CHOICE_KEY = f"{REFIT_PREFIX}checkpoint_choice"
FINE_TUNE_CHOICE_KEY = f"{REFIT_PREFIX}fine_tune_choice"


def recorded(refit: Optional[TabSwiftRefitRecord], name: str):
    """A field of the record of the fit a refit replaces; None for a first fit (no record)."""
    return None if refit is None else getattr(refit, name)


class PriorCheckAndRefitRecords:
    """``TabSwiftModel``'s check against the prior (``_prior_step``) and its record for refits
    (``_record_for_refits``)."""

    _plugin_name, _plugin_logger = "TabSwift", logger  # TorchPluginMixin's warnings

    def _prior_step(self, ctx: FitContext, y: np.ndarray) -> Dict:
        """With validation rows, fall back to the prior where the ensemble validates below it
        (``_check_against_prior``); a refit repeats the fit it replaces."""
        plan = ctx.plan
        if plan.has_val:
            return self._check_against_prior(y, ctx.y_val, ctx.summary, ctx.score_fn, ctx.budget)
        share = plan.prior_share
        reason = "no validation rows" if share is None else \
            f"repeats the fit it replaces ({plan.prior_basis}: {'the prior' if plan.prior_refit else 'the network'})"
        if plan.prior_refit:
            self._fall_back_to_prior(self._prior_prediction(y), reason)
        return {"checked": False, "fallback": plan.prior_refit, "reason": reason}

    def _record_for_refits(self, ctx: FitContext, choice) -> None:
        """What a refit without validation rows repeats, written by every fit on every path: the settings it runs
        with, and a ``TabSwiftRefitRecord``.  A bag combines its folds' records key by key over the first fold's
        keys (``common.refit``), so a key that one fold lacks fails the bag's refit."""
        p, plan, summary, refit = ctx.params, ctx.plan, ctx.summary, ctx.refit
        d = summary["fine_tune_decision"]
        kept = bool(d["fine_tuned"])
        decided = choice.replay is not None and choice.replay != p["checkpoint_path"]
        self.params_trained.update({"checkpoint_path": choice.replay or p["checkpoint_path"], "fine_tune": kept,
                                    "fine_tune_steps": int(d.get("best_step", 0)) if kept else 0,
                                    "tau": self.model.tau})
        # validated fine-tuning ran on the cosine horizon fine_tune_steps; a replay on the one it was given
        horizon = p["fine_tune_steps"] if plan.has_val else recorded(refit, "fine_tune_horizon") or p["fine_tune_steps"]
        write_refit_record(self.params_trained, TabSwiftRefitRecord(
            checkpoint_choice=(f"checkpoint_path={choice.requested!r}: {choice.reason}" if decided
                               else recorded(refit, "checkpoint_choice") or ""),
            fine_tune_choice=AUTO_CHOICES[kept] if plan.mode == "auto" else recorded(refit, "fine_tune_choice") or "",
            fine_tune_seconds=float(summary.get("fine_tune_seconds", 0.0)) if kept else 0.0,
            fine_tune_share=1.0 if kept else 0.0, fine_tune_horizon=int(horizon), **self._prior_record(ctx)))

    def _prior_record(self, ctx: FitContext) -> Dict[str, float]:
        """``prior_share`` and ``prior_checked`` of the record: from this fit's check against the prior where it
        had validation rows; a refit passes on the record it repeated (a refit of it repeats the same decision); a
        first fit without validation rows has none."""
        if ctx.plan.has_val:
            check = ctx.summary["prior_check"]
            return {"prior_share": 1.0 if check["fallback"] else 0.0,
                    "prior_checked": 1.0 if check["checked"] else 0.0}
        share = recorded(ctx.refit, "prior_share")
        return {"prior_share": float(share) if share is not None else (1.0 if self._prior is not None else 0.0),
                "prior_checked": float(recorded(ctx.refit, "prior_checked") or 0.0)}

    def _validated_score(self, summary: Dict) -> Optional[float]:
        """The whole ensemble's validation score as it now predicts, where this fit has measured it, else None:
        by tau="auto" or an explicit tau's check (with and without early exit), and by fine_tune="auto" once it
        has room to fine-tune (the zero-shot ensemble, and the fine-tuned one it keeps; both without early
        exit)."""
        tau = self.model.tau
        if tau is not None:
            for t, score, _ in summary.get("tau_table", ()):
                if t == tau:
                    return float(score)
            if summary.get("tau_requested") == tau:  # an explicit tau kept by its check
                base = float(summary["val_score_no_exit"])
                return base - float(summary["tau_requested_val_loss"]) * max(abs(base), 1e-12)
            return None
        if "val_score_no_exit" in summary:
            return float(summary["val_score_no_exit"])
        d = summary.get("fine_tune_decision") or {}
        if d.get("requested") != "auto":
            return None
        score = d.get("fine_tuned_val_score") if d.get("fine_tuned") else d.get("zero_shot_val_score")
        return None if score is None else float(score)

    def _check_against_prior(self, y: np.ndarray, y_val: np.ndarray, summary: Dict, score_fn, budget) -> Dict:
        """Falls back to the prior (``TorchPluginMixin._prior_prediction``) where the whole ensemble's validation
        score is below the prior's on the stopping metric: a pretrained network that does not suit a table can
        do worse than the class frequencies or the mean.  The score is the one the fit measured
        (``_validated_score``), else one prediction of the validation rows (``score_fn``) while at least half
        of the time limit is left: the members' context encodings it builds stay cached for the prediction of
        the same rows AutoGluon makes next (out-of-fold, or the validation score), so the check adds the
        queries' share of one prediction.  Its "checked" and "fallback" become the record's ``prior_checked`` and
        ``prior_share`` (``_prior_record``), which a bag averages over its folds."""
        score = self._validated_score(summary)
        if score is None:
            left = budget.remaining()
            if budget.limit is not None and left < 0.5 * budget.limit:
                return {"checked": False, "fallback": False,
                        "reason": f"{left:.1f} s left of {budget.limit:.1f} s: no time to score the ensemble on "
                                  f"validation"}
            score = float(score_fn())
        prior = self._prior_prediction(y)
        prior_score, reason = self._prior_verdict(score, y_val, prior)
        check = {"checked": True, "metric": self.stopping_metric.name, "tabswift": score, "prior": prior_score,
                 "fallback": False}
        if not reason:
            return check
        self._fall_back_to_prior(prior, reason)
        return {**check, "fallback": True, "reason": reason}

    @staticmethod
    def _prior_share_of_checked(refit: Optional[TabSwiftRefitRecord]) -> Tuple[Optional[float], str]:
        """(the share of the fits a refit replaces that fell back to the prior, what it was taken over).  Among
        the fits that compared with the prior: a bag averages ``prior_share`` and ``prior_checked`` over its
        folds, so their ratio leaves out the folds that had no time to check (they kept their network without a
        verdict).  Where fewer than half of the folds checked, the share among all of them: a minority of checks
        does not overrule the networks whose out-of-fold predictions the next level was fitted on.  (None, "")
        where the record is absent (not a refit)."""
        share, checked = recorded(refit, "prior_share"), recorded(refit, "prior_checked")
        if share is None:
            return None, ""
        share = float(share)
        if checked is None:
            return share, f"{share:.0%} of its fits fell back"
        checked = float(checked)
        if checked == 0.0:
            return 0.0, "none of its fits compared with the prior"
        if checked < 0.5:
            return share, f"{share:.0%} of its fits fell back, {checked:.0%} compared with the prior"
        return share / checked, f"{share / checked:.0%} of the fits that compared with the prior fell back"

    def _drop_network(self, reason: str) -> None:
        """A fall-back to the prior (``TorchPluginMixin._fall_back_to_prior``).  The ensemble stays for its record
        (tau) but drops its network: weights that will never run are neither kept in memory nor saved beside the
        model, and ``load`` does not look for them."""
        self.model.set_network(None)  # drops the context caches too
