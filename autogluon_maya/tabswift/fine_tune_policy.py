"""Whether a TabSwift fit fine-tunes, for how long, and what it keeps (the policy; the training loops are in
``finetune``).

- ``fine_tune="auto"`` with validation rows decides on them (``finetune.fine_tune_auto``); without them it stays
  zero-shot (nothing could tell fine-tuned weights from pretrained ones);
- ``fine_tune=True`` with validation rows keeps the best validated step (the pretrained weights are step 0);
- ``fine_tune=True`` without them (a refit) replays the step count of the fit it replaces, within the time that
  fit spent fine-tuning (``replay_steps``, ``replay_seconds``);
- ``fine_tune=False``, or a refit of a fit that fell back to the prior, does nothing.
"""

from __future__ import annotations

import time
from typing import Dict, Optional

from .fit_context import FitContext, logger
from .refit_records import TabSwiftRefitRecord, recorded

#: a refit's replayed fine-tuning may take this many times what the fit it replaces spent fine-tuning: its
#: episodes can be larger (a fold's context has fewer rows than all of them) and the machine busier
REPLAY_TIME_FACTOR = 2.0


def replay_steps(steps, refit: Optional[TabSwiftRefitRecord] = None) -> int:
    """The fine-tuning steps a refit without validation rows runs: the best step count of the fit it replaces
    (``steps``, its ``fine_tune_steps``).  A bag hands its refit the mean of its folds' records (AutoGluon's
    compressed params: ints as a rounded mean, floats as a mean), where a fold that kept zero-shot weights counts 0
    steps; the record's ``fine_tune_share`` (1.0 for a fold that kept fine-tuned weights, 0.0 otherwise) is
    averaged over the same folds, so the ratio of the two is the mean over the folds that fine-tuned."""
    steps = float(steps)
    share = recorded(refit, "fine_tune_share")
    return int(round(steps / float(share))) if share else int(round(steps))


def replay_seconds(refit: Optional[TabSwiftRefitRecord]) -> Optional[float]:
    """The seconds a refit's replayed fine-tuning may run: ``REPLAY_TIME_FACTOR`` x what the fit it replaces spent
    fine-tuning (the mean over a bag's folds that fine-tuned, as ``replay_steps``).  AutoGluon gives a refit no time
    limit; the replay runs at most the steps the folds kept, without their validation passes, so the folds' own
    time bounds it.  None where nothing was recorded (a user's explicit setting): no bound."""
    seconds = recorded(refit, "fine_tune_seconds")
    if seconds is None:
        return None
    share = recorded(refit, "fine_tune_share")
    return REPLAY_TIME_FACTOR * (float(seconds) / float(share) if share else float(seconds))


def _common(ctx: FitContext) -> Dict:
    p = ctx.params
    return dict(lr=float(p["fine_tune_lr"]), episodes_per_step=int(p["fine_tune_episodes_per_step"]),
                rows=int(p["fine_tune_rows"]), seed=ctx.seed)


def decide_fine_tuning(ctx: FitContext) -> Dict:
    """Fine-tune or not, and why (the module's rules); returns the decision the model reports
    (``tabswift_fine_tune``); fine-tuning's own summary goes to ``ctx.summary``."""
    mode, has_val, repeated = ctx.plan.mode, ctx.plan.has_val, recorded(ctx.refit, "fine_tune_choice")
    if mode == "auto" and has_val:
        decision = _auto(ctx)
    elif mode == "auto":  # a first fit without validation rows; refits get True/False from their folds
        decision = _auto_without_validation()
    elif mode and has_val:
        decision = _validated(ctx)
    elif mode:  # refit_full / no validation: replay the step count found with validation
        decision = _replayed(ctx)
    else:
        prior = ctx.plan.prior_refit
        decision = {"requested": False, "fine_tuned": False, "rule": "prior" if prior else "requested",
                    "reason": "the fit it replaces fell back to the prior" if prior else "fine_tune=False",
                    "steps_run": 0, "best_step": 0}
    if repeated and not (mode == "auto") and not ctx.plan.prior_refit:
        # a refit of a fine_tune="auto" fit: the folds' (or the original model's) decision, repeated
        decision["repeats"] = repeated
        logger.log(20, f"\tTabSwift: {'fine-tuned' if mode else 'zero-shot'} ({decision.get('steps_run', 0)} "
                       f"steps), repeating: {repeated}")
    return decision


def _auto_without_validation() -> Dict:
    from .finetune import auto_rule

    rule = auto_rule(has_val=False, n_classes=None, max_classes=0, context_rows=0, seconds_left=None,
                     step_seconds=0.0, min_steps=0, eval_every=1)
    decision = {"requested": "auto", "fine_tuned": rule.pop("fine_tune"), **rule, "steps_run": 0, "best_step": 0}
    logger.log(20, f"\tTabSwift fine_tune='auto': zero-shot ({rule['reason']})")
    return decision


def _validated(ctx: FitContext) -> Dict:
    """``fine_tune=True`` with validation rows: the best validated step is kept, by 70 % of the time limit."""
    from .finetune import fine_tune

    ens, p, summary = ctx.ensemble, ctx.params, ctx.summary
    n_eval = max(1, int(p["fine_tune_eval_members"]))
    summary.update(fine_tune(ens, no_exit_score(ens, ctx.score_fn, ens.members_[:n_eval]),
                             steps=int(p["fine_tune_steps"]), eval_every=int(p["fine_tune_eval_every"]),
                             patience=int(p["fine_tune_patience"]), deadline=ctx.deadline(0.7),
                             first_step_seconds=ctx.first_step, **_common(ctx)))
    summary.pop("history", None)
    kept = summary["best_step"] > 0
    return {"requested": True, "fine_tuned": kept, "rule": "requested",
            "reason": "fine_tune=True: the best validation step is kept (step 0 = the pretrained weights)",
            "steps_run": int(summary["fine_tune_steps"]), "best_step": int(summary["best_step"]),
            "stop_reason": summary.get("stop_reason"), "zero_shot_val_score": summary.get("zero_shot_val_score"),
            "fine_tuned_val_score": summary.get("best_val_score") if kept else None, "val_members": n_eval}


def _replayed(ctx: FitContext) -> Dict:
    """``fine_tune=True`` without validation rows: the recorded step count, within the recorded time."""
    from .finetune import fine_tune

    p, summary = ctx.params, ctx.summary
    steps, bound = replay_steps(p["fine_tune_steps"], ctx.refit), replay_seconds(ctx.refit)
    deadlines = [time.time() + bound] if bound is not None else []
    if ctx.time_limit is not None:
        deadlines.append(time.time() + ctx.budget.remaining())
    if steps > 0:
        summary.update(fine_tune(ctx.ensemble, None, steps=steps, eval_every=steps, patience=1,
                                 deadline=min(deadlines) if deadlines else None,
                                 schedule_steps=recorded(ctx.refit, "fine_tune_horizon") or steps,
                                 **_common(ctx)))
        summary.pop("history", None)
    ran = int(summary.get("fine_tune_steps", 0))  # 0 when fine-tuning skipped the table (> C_max classes)
    return {"requested": True, "fine_tuned": ran > 0, "rule": "replay",
            "reason": f"no validation rows: {steps} steps replayed, the step count the validated fit kept"
                      + (f", within {bound:.1f} s ({REPLAY_TIME_FACTOR:g} x the time its fine-tuning took)"
                         if bound is not None else ""),
            "steps_run": ran, "best_step": ran, "stop_reason": summary.get("stop_reason")}


def _auto(ctx: FitContext) -> Dict:
    """``fine_tune="auto"`` with validation rows (``finetune.fine_tune_auto``): fine-tune when the minimum useful
    step count fits before 70 % of the time limit (the share fine-tuning had before "auto"), keep the result only
    if the whole ensemble validates better with it (checked by 85 %)."""
    from .finetune import Deadlines, Schedule, fine_tune_auto

    ens, p = ctx.ensemble, ctx.params
    members = list(ens.members_)
    n_eval = max(1, int(p["fine_tune_eval_members"]))
    schedule = Schedule(steps=int(p["fine_tune_steps"]), eval_every=int(p["fine_tune_eval_every"]),
                        patience=int(p["fine_tune_patience"]), **_common(ctx))
    deadlines = Deadlines(ctx.deadline(0.7), ctx.deadline(0.85), ctx.first_step)
    result = fine_tune_auto(
        ens, no_exit_score(ens, ctx.score_fn, members[:n_eval]), no_exit_score(ens, ctx.score_fn, members),
        schedule, deadlines, eval_share=min(1.0, n_eval / len(members)), min_steps=int(p["fine_tune_min_steps"]))
    decision = result.pop("decision")
    result.pop("history", None)
    ctx.summary.update(result)
    decision.update(metric=ctx.metric_name, val_members=len(members))
    kept = bool(decision["fine_tuned"])
    verdict = "fine-tuned weights kept" if kept else "zero-shot"
    logger.log(20, f"\tTabSwift fine_tune='auto': {verdict} (rule {decision['rule']}): {decision['reason']}")
    return decision


def no_exit_score(ens, score_fn, members):
    """A validation score of ``members`` only, without early exit.

    Fine-tuning validates with the first ``fine_tune_eval_members`` members: every evaluation re-encodes the
    context (the weights changed), which dominates fine-tuning time on CPU.  Without early exit: the exit heads
    still belong to the pretrained backbone while it is being tuned (they are retrained afterwards with tau set,
    dropped without), so exits would make the step selection depend on stale heads."""
    def score() -> float:
        kept_members, kept_tau = ens.members_, ens.tau
        ens.members_, ens.tau = list(members), None
        try:
            return score_fn()
        finally:
            ens.members_, ens.tau = kept_members, kept_tau

    return score
