"""Approvals bind to content: which approved artifact changed, and where that sends the task."""

from __future__ import annotations

from automaton.core.phases import (
    APPROVED,
    ARTIFACT,
    AWAITING,
    COMPLETE,
    HUMAN,
    PHASES,
    SIGNOFF_PHASES,
)
from automaton.core.record import record  # not dataclasses: on the hook path

MISSING = "missing"  # the hash recorded for an artifact that does not exist


def parse_bind(value: str) -> dict[str, str]:
    """`"SPEC.md:<hex> DESIGN.md:<hex>"` -> {"SPEC.md": "<hex>", ...}; bad pairs are skipped."""
    out: dict[str, str] = {}
    for pair in value.split():
        name, sep, digest = pair.partition(":")
        if sep and name and digest:
            out[name] = digest
    return out


def format_bind(hashes: dict[str, str]) -> str:
    return " ".join(f"{k}:{v}" for k, v in sorted(hashes.items()))


def signoffs_passed(phase: str) -> list[str]:
    """Sign-off phases whose approval `phase` lies at or after, in workflow order."""
    if phase in (COMPLETE, HUMAN):
        return []
    idx = PHASES.index(phase)
    return [p for p in SIGNOFF_PHASES if PHASES.index(f"{p}:{APPROVED}") <= idx]


@record(frozen=True)
class Demotion:
    """A changed approved `artifact` sends the task from `from_phase` to `to_phase`."""

    from_phase: str
    to_phase: str
    artifact: str


def demotion(phase: str, bound: dict[str, str], current: dict[str, str]) -> Demotion | None:
    """The demotion a change of an approved artifact forces, or None.

    `bound`: artifact -> SHA-256 recorded at approval; `current`: artifact -> SHA-256 now
    (MISSING when absent). At `X:approved` a changed X artifact goes back to
    `X:awaiting_approval`; once the task has moved past X, the change goes to the human
    (`human_intervention`), because re-opening X would contradict the later artifacts.
    """
    for p in signoffs_passed(phase):
        art = ARTIFACT[p]
        if art in bound and current.get(art, MISSING) != bound[art]:
            target = f"{p}:{AWAITING}" if phase == f"{p}:{APPROVED}" else HUMAN
            return Demotion(phase, target, art)
    return None
