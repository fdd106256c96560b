"""How many ensemble members a fit trains, how many at once, and how the time left after one is spent.

Pure functions so the rules can be read and tested without training anything; ``MayaModel._fit`` asks
``plan_further_members`` before each further member, with the time then left (a member that early-stops
leaves more than its share).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MemberPlan:
    further: int  # members the time left holds (0: none); only the next one is started on this plan
    seconds: float  # the training time share of the next member (its validation pass excluded)
    num_layers: int  # MBA blocks of the further members
    reason: str  # why, for the log and the fit summary


def plan_further_members(*, time_left: float, validation_seconds: float, first_train_seconds: float,
                         first_seconds_to_best: float, max_further: int, num_layers: int, member_time: float,
                         deeper_member, may_deepen: bool) -> MemberPlan:
    """Choose between "k more members of the first one's depth" and "one member a block deeper".

    - A further member needs ``member_time`` x the first member's time to its best epoch (what came after was
      early stopping's patience) plus one validation pass; one cut shorter would mostly add noise to the
      average.  As many as fit (at most ``max_further``) share the time left evenly.
    - With ``deeper_member`` set and ``may_deepen`` (``ensemble_members="auto"`` and no depths to replay), a time
      left of at least ``deeper_member`` x the first member's training time goes whole to one member with one
      more MBA block: depth is what a one-block encoder lacks where it early-stops early (satimage: 0.9087
      validation accuracy for three one-block members, 0.9184 for one two-block network trained to the limit).
      It is the last member, and stays, as any member, only if the average validates better.
    """
    v = validation_seconds or 0.0
    # one pass held back: before the second member it scores the first member's share of the average, later it
    # is slack
    left = time_left - v
    need = member_time * first_seconds_to_best
    fits = min(max_further, int(left // (need + v))) if need + v > 0 else max_further
    if fits < 1 or left <= 0:
        return MemberPlan(0, 0.0, num_layers,
                          f"time: another member needs ~{need:.1f} s, {max(left, 0.0):.1f} s left")
    if deeper_member and may_deepen and left - v >= float(deeper_member) * first_train_seconds:
        return MemberPlan(1, left - v, num_layers + 1,
                          f"one member with {num_layers + 1} MBA blocks gets the {left - v:.0f} s left "
                          f"(first member: {first_train_seconds:.0f} s)")
    return MemberPlan(fits, left / fits - v, num_layers,
                      f"{fits} more member(s) of {left / fits - v:.0f} s each")


AUTO_MEMBERS = 3


def resolve_members(setting, time_limit) -> int:
    """Most members a fit may train.  ``"auto"`` fills a time limit's leftover (a fit that early-stops in a
    third of its budget has room for two more) and trains one without a limit, where nothing says how long
    the user is willing to wait."""
    if setting in (None, "auto"):
        return AUTO_MEMBERS if time_limit is not None else 1
    members = int(setting)
    if members < 1:
        raise ValueError(f"ensemble_members must be >= 1 or 'auto', got {setting!r}")
    return members


def parallel_wanted(setting) -> int:
    """The members ``parallel_members`` asks to train at once, before the machine and the fit have a say."""
    if setting is None or setting is False:
        return 1
    wanted = 2 if setting == "auto" or setting is True else int(setting)  # (1 == True in Python)
    if wanted < 1:
        raise ValueError(f"parallel_members must be >= 1 or 'auto', got {setting!r}")
    return wanted


def resolve_parallel(setting, max_members: int, num_cpus: int, device_type: str) -> int:
    """How many of the first members train at once.  Only on CPU (a GPU runs one network's kernels at a
    time anyway) and only where there are two members and two cores to share."""
    wanted = parallel_wanted(setting)
    if device_type != "cpu" or max_members < 2 or int(num_cpus or 1) < 2:
        return 1
    return max(1, min(wanted, max_members, int(num_cpus)))


def smoothed_log_loss(smoothing: float):
    """The score a further member must not worsen, for classification: the cross-entropy of the averaged
    probabilities against the targets the members were trained on, (1 - s) one-hot + s / classes.

    Plain log loss (s = 0) is a proper score and moves with every row's confidence, unlike accuracy.  With
    label smoothing the members are deliberately less confident, and averaging them makes them less confident
    still, so plain log loss charges the average for the smoothing itself (on digits, s = 0.1 fits judged that way
    kept 5 of 9 possible members over three seeds; session 15).  Against the smoothed targets the best score is at
    the smoothed probabilities, so the comparison judges the members, not the smoothing.  That best score is the
    smoothed targets' entropy, not 0 (``optimum`` is nominal; only comparisons of two scores are used)."""
    import numpy as np
    from autogluon.core.metrics import log_loss, make_scorer

    if not smoothing:
        return log_loss

    def cross_entropy(y_true, y_pred_proba):
        proba = np.asarray(y_pred_proba, dtype=np.float64)
        if proba.ndim == 1:  # binary: AutoGluon hands over the positive class's probability
            proba = np.stack([1 - proba, proba], axis=1)
        proba = np.clip(proba, 1e-15, 1.0)  # after stacking: a saturated 1.0 leaves a 0 beside it
        k = proba.shape[1]
        logp = np.log(proba)
        own = logp[np.arange(len(proba)), np.asarray(y_true, dtype=np.int64)]
        return float(-np.mean((1 - smoothing) * own + smoothing / k * logp.sum(axis=1)))

    return make_scorer(f"log_loss_smoothed_{smoothing:g}", cross_entropy, optimum=0, greater_is_better=False,
                       needs_proba=True)
