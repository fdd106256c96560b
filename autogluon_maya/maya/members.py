"""Ensemble members: how many networks a fit trains, how many at once, how the time is shared, which are kept.
``train_members`` is the member loop of ``MayaModel._fit``; it sees callables that build and train one network,
so its rules run in tests on a clock of the test's own.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from .defaults import MEMBER_SEED_STRIDE  # member i's seed: the fit's seed + i x this stride

logger = logging.getLogger(f"autogluon.ext.{__name__}")

AUTO_MEMBERS = 3  # ensemble_members="auto" with a time limit: the cap docs/maya.md gives the evidence for
MEMBER_TIME = 1.1  # x the first member's time to its best epoch: what a further member needs (plan_further_members)
# Members train at once only while a network's training batch is this small: its step is then many small kernels
# that a second thread barely speeds up; a larger one's big matmuls run ~2x faster on two threads.
PARALLEL_MAX_ACTIVATION_BYTES = 256 * 2**20


# further: members the time left holds (only the next starts on this plan); seconds: the next one's training share
MemberPlan = NamedTuple("MemberPlan", [("further", int), ("seconds", float), ("reason", str)])


def plan_further_members(*, time_left: float, validation_seconds: Optional[float], first_seconds_to_best: float,
                         max_further: int, member_time: float = MEMBER_TIME) -> MemberPlan:
    """As many further members as the time left holds (each ``member_time`` x the first one's time to its best
    epoch plus one validation pass), at most ``max_further``, share it evenly."""
    v = validation_seconds or 0.0
    left = time_left - v  # one pass held back: it scores the first member's share of the average
    need = member_time * first_seconds_to_best
    fits = min(max_further, int(left // (need + v))) if need + v > 0 else max_further
    if fits < 1 or left <= 0:
        return MemberPlan(0, 0.0, f"time: another member needs ~{need:.1f} s, {max(left, 0.0):.1f} s left")
    return MemberPlan(fits, left / fits - v, f"{fits} more member(s) of {left / fits - v:.0f} s each")


def resolve_members(setting, time_limit) -> int:
    """Most members a fit may train: ``"auto"`` fills a time limit's leftover and trains one network without a
    limit, where nothing says how long the user is willing to wait."""
    if setting == "auto":
        return AUTO_MEMBERS if time_limit is not None else 1
    return int(setting)


def parallel_wanted(setting) -> int:
    """The members ``parallel_members`` asks to train at once, before the machine and the fit have a say."""
    return 2 if setting == "auto" else int(setting)


def resolve_parallel(setting, max_members: int, num_cpus: int, device_type: str, step_bytes: int = 0) -> int:
    """How many of the first members train at once: only on CPU (a GPU runs one network's kernels at a time
    anyway), only with two members and two cores to share, never more than the cores, and only for a network
    whose training batch takes at most ``PARALLEL_MAX_ACTIVATION_BYTES`` (``step_bytes``)."""
    if device_type != "cpu" or max_members < 2 or int(num_cpus or 1) < 2 or step_bytes > PARALLEL_MAX_ACTIVATION_BYTES:
        return 1
    return max(1, min(parallel_wanted(setting), max_members, int(num_cpus)))


# build(seed) -> network, in the calling thread (torch's global generator seeds the weights); train(network, seed,
# budget, threads, reserve_passes, max_epochs or None) -> a summary as train_maya's
Build, Train = Callable[[int], object], Callable[[object, int, object, int, int, Optional[int]], dict]
MEMBER_KEYS = ("seed", "parallel", "started_at", "epochs", "best_epoch", "best_score", "stop_reason",
               "train_seconds", "seconds_to_best", "ensemble_score")


def train_members(build: Build, train: Train, *, budget, max_members: int, parallel: int, num_cpus: int, seed: int,
                  val_proba: Optional[Callable] = None, judge: Optional[Callable] = None,
                  replay: Optional[Sequence[Sequence[int]]] = None) -> Tuple[List[tuple], dict]:
    """Train up to ``max_members`` networks; returns the kept ones as (network, summary) and the fit's report.

    - The first ``parallel`` members train at once, ``num_cpus // parallel`` torch threads each, on one shared
      budget: a member that fails ends it for the other.  Each keeps a validation pass back for its scoring.
    - With a time limit the plan is made again before each further member from the time then left
      (``plan_further_members``); each trains to the end of its share.
    - With ``val_proba``, a further member is kept only if ``judge`` (higher is better) of the average with it is
      not lower than without; the next member still trains.
    - ``replay`` ([[seed, epochs], ...], refit_full): exactly those members, each for its own epoch count."""
    from autogluon.core.utils.exceptions import TimeLimitExceeded

    from ..common.training import torch_threads

    seeds = [int(s) for s, _ in replay] if replay else [seed + MEMBER_SEED_STRIDE * i for i in range(max_members)]
    epochs = [int(e) for _, e in replay] if replay else [None] * len(seeds)
    kept, probas, dropped, started_with, trained = [], [], [], [], []
    stop, best, failed = f"ensemble_members={len(seeds)}", None, False

    def run(i: int, network, member_budget, threads: int, reserve_passes: int) -> tuple:
        start = budget.elapsed()
        summary = train(network, seeds[i], member_budget, threads, reserve_passes, epochs[i])
        summary = {**summary, "seed": seeds[i], "started_at": start, "train_seconds": budget.elapsed() - start}
        at_best = [t for epoch, t, _ in summary["history"] if epoch == summary["best_epoch"]]
        summary["seconds_to_best"] = at_best[0] - start if at_best else summary["train_seconds"]
        return network, summary

    i = 0
    while i < len(seeds):
        if i == 0 and parallel > 1:
            n = min(parallel, len(seeds))
            threads = max(1, num_cpus // n)
            logger.log(15, f"\tMAYA: members 1-{n} train in parallel, {threads} thread(s) each")
            started_with += [budget.remaining()] * n
            pair = budget.share(float("inf"))
            networks = [build(seeds[j]) for j in range(n)]

            def in_pair(j: int) -> tuple:
                try:
                    return run(j, networks[j], pair, threads, 1 if val_proba is not None else 0)
                except BaseException:
                    pair.limit = 0.0
                    raise

            with torch_threads(threads), ThreadPoolExecutor(n) as pool:
                results = list(pool.map(in_pair, range(n)))
        else:
            member_budget = budget
            if i > 0 and budget.limit is not None and not replay:
                first = kept[0][1]
                plan = plan_further_members(time_left=budget.remaining(), max_further=len(seeds) - i,
                                            validation_seconds=first["validation_seconds"],
                                            first_seconds_to_best=first["seconds_to_best"])
                logger.log(15, f"\tMAYA: member {i + 1}: {plan.reason}")
                if plan.further < 1:
                    stop = plan.reason
                    break
                member_budget = budget.share(plan.seconds)
            started_with.append(member_budget.remaining())
            results = [run(i, build(seeds[i]), member_budget, num_cpus, 0)]
        for j, (network, summary) in enumerate(results, start=i):
            summary["parallel"] = len(results)
            if summary["steps"] == 0 or summary["stop_reason"].startswith("infeasible"):
                if j == 0:  # AutoGluon logs a skip for time without the reason: say it here
                    reason = summary["stop_reason"] or "no training step fitted"
                    logger.warning(f"\tMAYA declined to train: {reason}")
                    raise TimeLimitExceeded(f"MAYA skipped: {reason}")
                stop, failed = f"member {j + 1}: {summary['stop_reason']}", True
                break
            trained.append((j, summary))
            if val_proba is not None and j > 0:
                if not probas:  # the first member's share, scored once a second one exists
                    probas.append(val_proba(kept[0][0]))
                    best = kept[0][1]["ensemble_score"] = judge(probas[0])
                proba = val_proba(network)
                score = judge(np.mean(probas + [proba], axis=0))
                if score < best:
                    dropped.append(f"member {j + 1} dropped: the average scored {score:.4f} on validation, "
                                   f"{best:.4f} without it")
                    logger.log(15, f"\tMAYA: {dropped[-1]}")
                    continue
                probas.append(proba)
                best = summary["ensemble_score"] = score
            kept.append((network, summary))
        if failed:
            break
        i += len(results)
    report = {**kept[0][1], "members_stop": stop, "members_dropped": dropped,
              "members_started_with_seconds": started_with,
              "members": [{k: s.get(k) for k in MEMBER_KEYS} for _, s in kept],
              "trained_best_epochs": [s["best_epoch"] for _, s in trained],
              "stop": stop_record(trained[-1], stop, dropped, planned=len(seeds), kept=len(kept),
                                  ended_early=failed or stop.startswith("time"))}
    return kept, report


def stop_rule(reason: str) -> str:
    """The rule behind a network's stop reason (``train_maya``'s ``stop_reason``): ``patience`` (early stopping on
    the validation score), ``max_epochs``, or ``time`` (the budget, or a step that cannot fit in it)."""
    if reason == "early stopping":
        return "patience"
    if reason.startswith(("time", "infeasible")):
        return "time"
    return reason or "unknown"


def stop_record(last: tuple, members_stop: str, dropped: List[str], *, planned: int, kept: int,
                ended_early: bool) -> dict:
    """Why a fit ended, for the model's info: the rule that stopped its last network (``last``: its index and
    summary) and at which epoch, or ``time`` when the member loop ended before its last planned member (no time
    for another, or one that could not train); ``members``: how many were kept of those planned, and which the
    validation judged not worth keeping."""
    j, summary = last
    rule = "time" if ended_early else stop_rule(summary["stop_reason"])
    detail = f"{kept} of {planned} member(s) kept ({members_stop})"
    if dropped:
        detail += "; " + "; ".join(dropped)
    return {"rule": rule, "epoch": int(summary["epochs"]), "member": j + 1, "network": summary["stop_reason"],
            "members": detail}
