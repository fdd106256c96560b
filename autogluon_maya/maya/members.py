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


class MemberSettings(NamedTuple):
    """What the member loop trains: up to ``max_members`` networks, member i from ``seed`` + i x
    ``MEMBER_SEED_STRIDE``; the first ``parallel`` at once, sharing ``num_cpus`` threads.  ``replay``
    ([[seed, epochs], ...], refit_full): exactly those members, each for its own epoch count."""
    max_members: int
    parallel: int
    num_cpus: int
    seed: int
    replay: Optional[Sequence[Sequence[int]]] = None

    def seeds(self) -> List[int]:
        if self.replay:
            return [int(s) for s, _ in self.replay]
        return [self.seed + MEMBER_SEED_STRIDE * i for i in range(self.max_members)]

    def epochs(self) -> List[Optional[int]]:
        return [int(e) for _, e in self.replay] if self.replay else [None] * self.max_members


class MemberJudge(NamedTuple):
    """How a further member is judged: ``val_proba(network)``, its validation predictions; ``judge(proba)``, the
    score (higher is better) of an average of members' predictions."""
    val_proba: Callable
    judge: Callable


class _Ensemble:
    """The members kept so far, and the validation record that decides whether a further one stays: it stays only
    if the average with it validates no worse than without (the next member still trains)."""

    def __init__(self, judge: Optional[MemberJudge]):
        self.judge, self.kept, self.probas, self.dropped, self.best = judge, [], [], [], None

    def offer(self, j: int, network, summary: dict) -> None:
        if self.judge is not None and j > 0:
            if not self.probas:  # the first member's share, scored once a second one exists
                self.probas.append(self.judge.val_proba(self.kept[0][0]))
                self.best = self.kept[0][1]["ensemble_score"] = self.judge.judge(self.probas[0])
            proba = self.judge.val_proba(network)
            score = self.judge.judge(np.mean(self.probas + [proba], axis=0))
            if score < self.best:
                self.dropped.append(f"member {j + 1} dropped: the average scored {score:.4f} on validation, "
                                    f"{self.best:.4f} without it")
                logger.log(15, f"\tMAYA: {self.dropped[-1]}")
                return
            self.probas.append(proba)
            self.best = summary["ensemble_score"] = score
        self.kept.append((network, summary))


def _train_pair(build: Build, run: Callable, seeds: List[int], budget, n: int, num_cpus: int,
                reserve_passes: int) -> List[tuple]:
    """The first ``n`` members at once, ``num_cpus // n`` torch threads each, on one shared budget: a member that
    fails ends it for the other.  Each keeps ``reserve_passes`` validation passes back for its scoring."""
    from ..common.training import torch_threads

    threads = max(1, num_cpus // n)
    logger.log(15, f"\tMAYA: members 1-{n} train in parallel, {threads} thread(s) each")
    pair = budget.share(float("inf"))
    networks = [build(seeds[j]) for j in range(n)]

    def in_pair(j: int) -> tuple:
        try:
            return run(j, networks[j], pair, threads, reserve_passes)
        except BaseException:
            pair.limit = 0.0
            raise

    with torch_threads(threads), ThreadPoolExecutor(n) as pool:
        return list(pool.map(in_pair, range(n)))


def _further_member_budget(budget, first: dict, further: int) -> Tuple[Optional[object], str]:
    """(the budget of the next member, or None where the time left holds none; the plan's reason): with a time
    limit the plan is made again before each further member from the time then left (``plan_further_members``)
    and the member trains to the end of its share."""
    plan = plan_further_members(time_left=budget.remaining(), max_further=further,
                                validation_seconds=first["validation_seconds"],
                                first_seconds_to_best=first["seconds_to_best"])
    return (budget.share(plan.seconds) if plan.further >= 1 else None), plan.reason


def train_members(build: Build, train: Train, budget, settings: MemberSettings,
                  judge: Optional[MemberJudge] = None) -> Tuple[List[tuple], dict]:
    """Train the members ``settings`` asks for; returns the kept ones as (network, summary) and the fit's report.
    Steps: the first members at once (``_train_pair``) or one at a time, each further one on the plan made from
    the time then left (``_further_member_budget``, not for a replay), each kept or dropped by ``judge``
    (``_Ensemble``); a first member that cannot train fails the fit with the reason."""
    from autogluon.core.utils.exceptions import TimeLimitExceeded

    seeds, epochs = settings.seeds(), settings.epochs()
    ensemble, started_with, trained = _Ensemble(judge), [], []
    stop, failed = f"ensemble_members={len(seeds)}", False

    def run(i: int, network, member_budget, threads: int, reserve_passes: int) -> tuple:
        start = budget.elapsed()
        summary = train(network, seeds[i], member_budget, threads, reserve_passes, epochs[i])
        summary = {**summary, "seed": seeds[i], "started_at": start, "train_seconds": budget.elapsed() - start}
        at_best = [t for epoch, t, _ in summary["history"] if epoch == summary["best_epoch"]]
        summary["seconds_to_best"] = at_best[0] - start if at_best else summary["train_seconds"]
        return network, summary

    i = 0
    while i < len(seeds):
        if i == 0 and settings.parallel > 1:
            n = min(settings.parallel, len(seeds))
            started_with += [budget.remaining()] * n
            results = _train_pair(build, run, seeds, budget, n, settings.num_cpus, 1 if judge is not None else 0)
        else:
            member_budget = budget
            if i > 0 and budget.limit is not None and not settings.replay:
                member_budget, reason = _further_member_budget(budget, ensemble.kept[0][1], len(seeds) - i)
                logger.log(15, f"\tMAYA: member {i + 1}: {reason}")
                if member_budget is None:
                    stop = reason
                    break
            started_with.append(member_budget.remaining())
            results = [run(i, build(seeds[i]), member_budget, settings.num_cpus, 0)]
        for j, (network, summary) in enumerate(results, start=i):
            summary["parallel"] = len(results)
            if summary["steps"] == 0 or summary["stop_reason"].startswith("infeasible"):
                if j == 0:  # AutoGluon logs a skip for time without the reason: say it here
                    reason = summary["stop_reason"] or "no training step fitted"
                    logger.warning(f"MAYA declined to train: {reason}")
                    raise TimeLimitExceeded(f"MAYA skipped: {reason}")
                stop, failed = f"member {j + 1}: {summary['stop_reason']}", True
                break
            trained.append((j, summary))
            ensemble.offer(j, network, summary)
        if failed:
            break
        i += len(results)
    kept, dropped = ensemble.kept, ensemble.dropped
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
