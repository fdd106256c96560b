"""How the time left after an ensemble member is spent: planned again before each further member.

A pure function so the rule can be read and tested without training anything; ``MayaModel._fit`` asks it
before each further member, with the time then left (a member that early-stops leaves more than its share).
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
