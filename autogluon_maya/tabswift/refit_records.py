"""The check against the prior and the record a refit repeats, as methods of ``TabSwiftModel`` (a mixin: they
read and write the model's ``params_trained``, ``_prior`` and ``model``).

A refit (``refit_full``, a bag's all-rows model) has no validation rows: it repeats the decisions of the fit it
replaces, which AutoGluon hands it as hyperparameters (that fit's ``params_trained``; a bag first combines its
folds' records key by key).
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import numpy as np

from .fit_context import FitContext, logger

#: set in params_trained when "auto" (or the environment variable) chose the weights: why, for the refit
#: that loads the same weights by their explicit name (``sources.WeightsChoice.replay``)
CHOICE_KEY = "checkpoint_chosen"
#: set in params_trained by a fine_tune="auto" fit, beside fine_tune (True/False) and fine_tune_steps, so a refit
#: without validation rows (refit_full, a bag's all-rows model) repeats the decision and says so.  The text
#: depends on the outcome only: a bag compresses its folds' params_trained by majority vote, and equal texts
#: for equal outcomes make the vote on the text agree with the vote on fine_tune (ties: the first fold's)
FINE_TUNE_CHOICE_KEY = "fine_tune_chosen"
AUTO_CHOICES = {True: "fine_tune='auto' kept the fine-tuned weights on validation",
                False: "fine_tune='auto' kept the zero-shot weights"}


class PriorCheckAndRefitRecords:
    """``TabSwiftModel``'s check against the prior (``_prior_step``) and its record for refits
    (``_record_for_refits``)."""

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
        """What a refit without validation rows repeats, written by every fit on every path.  AutoGluon gives a
        refit the fit's ``params_trained`` as hyperparameters; a bag first combines its folds' records key by key
        over the first fold's keys (``BaggedEnsembleModel._get_compressed_params``), so a key that one fold
        lacks fails the bag's refit.  Recorded: the weights (``checkpoint_path`` by the value that names them
        again, ``CHOICE_KEY`` the decision "auto" took, "" where none), the fine-tuning outcome, the τ in use,
        and whether the fit fell back to the prior."""
        p, plan, summary = ctx.params, ctx.plan, ctx.summary
        d, mode = summary["fine_tune_decision"], plan.mode
        kept = bool(d["fine_tuned"])
        decided = choice.replay is not None and choice.replay != p["checkpoint_path"]
        self.params_trained["checkpoint_path"] = choice.replay or p["checkpoint_path"]
        self.params_trained[CHOICE_KEY] = (f"checkpoint_path={choice.requested!r}: {choice.reason}" if decided
                                           else p.get(CHOICE_KEY) or "")
        # validated fine-tuning ran on the cosine horizon fine_tune_steps; a replay on the one it was given
        horizon = p["fine_tune_steps"] if plan.has_val else p.get("fine_tune_schedule_steps") or p["fine_tune_steps"]
        self._record_fine_tune(p, kept, int(d.get("best_step", 0)) if kept else 0,
                               AUTO_CHOICES[kept] if mode == "auto" else p.get(FINE_TUNE_CHOICE_KEY) or "",
                               seconds=float(summary.get("fine_tune_seconds", 0.0)) if kept else 0.0,
                               horizon=int(horizon))
        self.params_trained["tau"] = self.model.tau
        if "prior_share" not in self.params_trained:  # no validation rows: _check_against_prior did not run
            # a refit passes on the record it repeated (a refit of it repeats the same decision); a first fit
            # without validation rows has none
            self.params_trained["prior_share"] = float(p["prior_share"]) if p.get("prior_share") is not None \
                else (1.0 if self._prior is not None else 0.0)
            self.params_trained["prior_checked"] = float(p.get("prior_checked") or 0.0)

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
        queries' share of one prediction.  Records for refits ``prior_checked`` (1.0 compared with the prior, 0.0
        had no time to) and ``prior_share`` (1.0 fell back, else 0.0), which a bag averages over its folds."""
        self.params_trained["prior_share"] = self.params_trained["prior_checked"] = 0.0
        score = self._validated_score(summary)
        if score is None:
            left = budget.remaining()
            if budget.limit is not None and left < 0.5 * budget.limit:
                return {"checked": False, "fallback": False,
                        "reason": f"{left:.1f} s left of {budget.limit:.1f} s: no time to score the ensemble on "
                                  f"validation"}
            score = float(score_fn())
        self.params_trained["prior_checked"] = 1.0
        prior = self._prior_prediction(y)
        prior_score, reason = self._prior_verdict(score, y_val, prior)
        check = {"checked": True, "metric": self.stopping_metric.name, "tabswift": score, "prior": prior_score,
                 "fallback": False}
        if not reason:
            return check
        self.params_trained["prior_share"] = 1.0
        self._fall_back_to_prior(prior, reason)
        return {**check, "fallback": True, "reason": reason}

    @staticmethod
    def _prior_share_of_checked(p: Dict) -> Tuple[Optional[float], str]:
        """(the share of the fits a refit replaces that fell back to the prior, what it was taken over).  Among
        the fits that compared with the prior: a bag averages ``prior_share`` and ``prior_checked`` over its
        folds, so their ratio leaves out the folds that had no time to check (they kept their network without a
        verdict).  Where fewer than half of the folds checked, the share among all of them: a minority of checks
        does not overrule the networks whose out-of-fold predictions the next level was fitted on.  (None, "")
        where the record is absent (not a refit)."""
        share, checked = p.get("prior_share"), p.get("prior_checked")
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

    def _fall_back_to_prior(self, prior, reason: str) -> None:
        """Predict ``prior`` from now on.  The ensemble stays for its record (tau) but drops its network: weights
        that will never run are neither kept in memory nor saved beside the model, and ``load`` does not look
        for them."""
        self._prior = prior
        self.model.set_network(None)  # drops the context caches too
        logger.warning(f"\tTabSwift predicts the prior instead: {reason}")

    def _record_auto(self, p, kept: bool, steps: int = 0, seconds: float = 0.0) -> None:
        """params_trained of a fine_tune="auto" fit (``_record_fine_tune`` with the decision's text)."""
        self._record_fine_tune(p, kept, steps, AUTO_CHOICES[bool(kept)], seconds)

    def _record_fine_tune(self, p, kept: bool, steps: int, choice: str, seconds: float = 0.0,
                          horizon: Optional[int] = None) -> None:
        """The fine-tuning outcome as explicit values a refit repeats: whether the kept weights are fine-tuned,
        their step count and the cosine's horizon; ``fine_tune_share`` (1.0 or 0.0) lets a bag's refit average
        the step count over the folds that fine-tuned (``fine_tune_policy.replay_steps``); ``choice``: the "auto"
        decision's text ("" where fine_tune was given); ``seconds``: how long the fine-tuning ran, the bound of a
        refit's replay (``fine_tune_policy.replay_seconds``); ``horizon``: the cosine's horizon the fine-tuning
        ran on (default ``fine_tune_steps``)."""
        self.params_trained["fine_tune"] = bool(kept)
        self.params_trained["fine_tune_steps"] = int(steps)
        self.params_trained["fine_tune_seconds"] = float(seconds)
        self.params_trained["fine_tune_share"] = 1.0 if kept else 0.0
        self.params_trained["fine_tune_schedule_steps"] = int(p["fine_tune_steps"] if horizon is None else horizon)
        self.params_trained[FINE_TUNE_CHOICE_KEY] = choice
