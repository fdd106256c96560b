"""A fit's exit heads and its early-exit threshold τ (TabSwift paper, Sec. 3.3: a query leaves the network at the
first layer whose exit head's confidence reaches τ).

Exit heads are used only if they were trained on the backbone as it is now: fine-tuning marks them stale, heads
added to a checkpoint without any start stale; training clears the mark, and heads still stale at the end are
dropped, so neither this fit nor a later τ can exit with them.  An explicit τ after retrained heads is checked on
validation; ``tau="auto"`` is chosen there (``choose_tau``).
"""

from __future__ import annotations

import time
from typing import Dict, Optional

from .fit_context import FitContext, logger

TAU_CANDIDATES = (0.99, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5)


def settle_early_exit(ctx: FitContext) -> None:
    """Train, check, choose or drop: leaves ``ctx.ensemble.tau`` at the τ the model predicts with."""
    ens, p, plan, summary = ctx.ensemble, ctx.params, ctx.plan, ctx.summary
    network, tau = ens.network, plan.tau
    if plan.wants_exit and plan.headless:
        network.add_exit_heads()
        logger.log(20, f"\tTabSwift: the checkpoint has no exit heads (the authors' released weights ship "
                       f"none): training them on this table with the backbone frozen, for tau={tau!r}")
    if plan.wants_exit and network.exit_heads_stale:
        summary.update(train_exit_heads(ctx, fresh=plan.headless))
        if not network.exit_heads_stale and tau != "auto":
            ens.tau = float(tau)
            if plan.has_val:
                summary.update(check_retrained_tau(ens, ctx.score_fn, float(tau), float(p["tau_max_loss"]),
                                                   ctx.budget))
    if network.exit_heads_stale:
        summary.update(drop_stale_exit_heads(ens, p, tau if plan.wants_exit else None, fresh=plan.headless))
        if plan.wants_exit:
            tau = None
    if tau == "auto":
        if plan.has_val and network.n_exit_layers:
            summary.update(choose_tau(ens, ctx.score_fn, float(p["tau_max_loss"]), ctx.budget))
        else:
            logger.log(20, "\tTabSwift: tau='auto' needs validation data and exit heads; early exit off")
            ens.tau = None


def train_exit_heads(ctx: FitContext, fresh: bool) -> Dict:
    """Train the exit and per-layer heads on the backbone as it is now (frozen): after fine-tuning moved it, or
    on heads just added to a checkpoint without any (``fresh``).  Until 85 % of the time limit."""
    from .exit_heads import retrain_exit_heads

    p = ctx.params
    result = retrain_exit_heads(ctx.ensemble, int(p["fine_tune_exit_steps"]),
                                episodes_per_step=int(p["fine_tune_episodes_per_step"]),
                                rows=int(p["fine_tune_rows"]), seed=ctx.seed, deadline=ctx.deadline(0.85),
                                first_step_seconds=ctx.first_step)
    if result["exit_retrain_steps"]:
        what = "trained on this table" if fresh else "retrained on the fine-tuned backbone"
        logger.log(20, f"\tTabSwift: exit heads {what} ({result['exit_retrain_steps']} steps, "
                       f"{result['exit_retrain_seconds']:.1f} s)")
        if fresh:
            result["exit_heads"] = "trained on this table"
    return result


def drop_stale_exit_heads(ens, p: Dict, tau, fresh: bool) -> Dict:
    """Drop heads that were not trained on the current backbone; with ``tau`` (the early exit this fit wanted,
    None if it wanted none), say why early exit is off."""
    ens.network.drop_exit_heads()
    ens.tau = None
    if tau is None:
        logger.log(20, "\tTabSwift: exit heads dropped: fine-tuning changed the backbone they were trained "
                       "on and this fit does not use early exit (set tau to keep retrained ones)")
        return {"exit_heads": "dropped"}
    cause = "fine_tune_exit_steps=0" if int(p["fine_tune_exit_steps"]) < 1 else \
        f"the time limit left no time to {'train' if fresh else 'retrain'} them"
    if fresh:
        cause = f"the checkpoint has no exit heads and {cause}"
        context = "the checkpoint has no exit heads and none were trained on this table"
    else:
        context = ("fine-tuning changed the backbone and the exit heads, calibrated on the pretrained one, "
                   "were not retrained")
    logger.log(20, f"\tTabSwift: early exit turned off (tau={tau!r} not used): {context} ({cause}); "
                   f"the heads were dropped")
    return {"exit_heads": "dropped", "early_exit_off": cause}


def check_retrained_tau(ens, score_fn, tau: float, max_loss: float, budget) -> Dict:
    """An explicit τ after fine-tuning: keep it only if validation shows the retrained exit heads lose at most
    ``max_loss`` (relative) against no exit; otherwise raise it to the lowest larger candidate that does, or turn
    early exit off.

    Why: a few dozen episodes of head retraining are not always enough to recalibrate them to the moved backbone
    (on one 250-row table, 15 steps, τ = 0.5 lost up to 2 % RMSE with one checkpoint and up to 10 % with another,
    depending on the data seed, and gained on other seeds), and the user set τ for speed, not for a loss they
    cannot see."""
    ens.tau = None
    if budget.limit is not None and budget.expired():
        logger.log(20, f"\tTabSwift: early exit turned off: no time left to check tau={tau} on validation "
                       f"with the retrained exit heads")
        return {"early_exit_off": "the time limit left no time to check tau on validation"}
    t0 = time.time()
    base = score_fn()
    ens.tau = tau
    score = score_fn()
    per_call = (time.time() - t0) / 2
    loss = (base - score) / max(abs(base), 1e-12)
    check = {"tau_requested": tau, "tau_requested_val_loss": loss, "val_score_no_exit": base}
    if loss <= max_loss:
        return check
    larger = tuple(t for t in TAU_CANDIDATES if t > tau)
    chosen = choose_tau(ens, score_fn, max_loss, budget, candidates=larger, base=(base, per_call))
    logger.log(20, f"\tTabSwift: tau={tau} lost {100 * loss:.1f} % on validation with the retrained exit "
                   f"heads (tau_max_loss {100 * max_loss:g} %); using tau={ens.tau} instead")
    return {**chosen, **check}


def choose_tau(ens, score_fn, max_loss: float, budget, candidates=TAU_CANDIDATES,
               base: Optional[tuple] = None) -> Dict:
    """Lowest τ (earliest exits) whose validation score is within ``max_loss`` (relative) of no exit.

    Candidates run from high τ (late exits) to low; when the time budget runs out the search stops and keeps the
    best τ found so far (None if none was tried).  ``base``: the no-exit score and the seconds one validation
    pass took, when the caller has them."""
    ens.tau = None
    if base is None:
        t0 = time.time()
        base = (score_fn(), time.time() - t0)
    base, per_call = base
    chosen, depth, table = None, float(ens.network.config.n_layers), []
    for tau in sorted(candidates, reverse=True):
        if budget.limit is not None and budget.remaining() < 1.5 * per_call:
            logger.log(20, f"\tTabSwift: tau search stopped at the time limit after {len(table)} candidates")
            break
        ens.tau = tau
        score = score_fn()
        mean_depth = ens.last_mean_exit_layer
        table.append((tau, score, mean_depth))
        if base - score <= max_loss * max(abs(base), 1e-12):
            chosen, depth = tau, mean_depth
    ens.tau = chosen
    logger.log(20, f"\tTabSwift: tau={chosen} chosen on validation (mean exit layer {depth:.2f} of "
                   f"{ens.network.config.n_layers}; score {base:.4f} without early exit)")
    return {"tau": chosen, "tau_mean_exit_layer": depth, "tau_table": table, "val_score_no_exit": base}
