"""The task phase machine (README.md#tasks-phases-and-sign-offs): pure tables and rules.

Invariants: `.state` holds exactly one member of PHASES; only the four sign-off phases have
`:awaiting_approval`/`:approved` sub-states; `complete` is terminal; `human_intervention` is
left only through a human `--approve --to`.
"""

from __future__ import annotations

import re
from enum import Enum
from itertools import pairwise

SIGNOFF_PHASES = ("research", "decomposition", "design", "test_design")
WORK_PHASES = ("implement", "bug_find", "adversarial_bug_find", "doc_review", "referee")
COMPLETE = "complete"
HUMAN = "human_intervention"
NEW = "new"
AWAITING = "awaiting_approval"
APPROVED = "approved"

PHASES: tuple[str, ...] = (
    NEW,
    *(f"{p}{s}" for p in SIGNOFF_PHASES for s in ("", f":{AWAITING}", f":{APPROVED}")),
    *WORK_PHASES,
    COMPLETE,
    HUMAN,
)

# The deliverable each phase produces ("Artifacts gate transitions" in the README).
ARTIFACT: dict[str, str] = {
    "research": "SPEC.md",
    "decomposition": "DECOMPOSITION.md",
    "design": "DESIGN.md",
    "test_design": "TEST_PLAN.md",
    "implement": "IMPLEMENTATION.md",
    "bug_find": "BUG_REPORT.md",
    "adversarial_bug_find": "ADVERSARIAL_BUG_REPORT.md",
    "doc_review": "DOC_REVIEW.md",
    "referee": "VERDICT.md",
}
ARTIFACTS: frozenset[str] = frozenset(ARTIFACT.values())

# The forbidden artifacts of each phase: files a later phase produces.
_ALL_AFTER_SPEC = (
    "DESIGN.md", "DECOMPOSITION.md", "TEST_PLAN.md", "IMPLEMENTATION.md", "BUG_REPORT.md",
    "ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md", "VERDICT.md",
)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    NEW: ("SPEC.md", *_ALL_AFTER_SPEC),
    "research": _ALL_AFTER_SPEC,
    "decomposition": (
        "DESIGN.md", "TEST_PLAN.md", "IMPLEMENTATION.md", "BUG_REPORT.md",
        "ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md", "VERDICT.md",
    ),
    "design": (
        "DECOMPOSITION.md", "TEST_PLAN.md", "IMPLEMENTATION.md", "BUG_REPORT.md",
        "ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md", "VERDICT.md",
    ),
    "test_design": (
        "DECOMPOSITION.md", "IMPLEMENTATION.md", "BUG_REPORT.md", "ADVERSARIAL_BUG_REPORT.md",
        "DOC_REVIEW.md", "VERDICT.md",
    ),
    "implement": ("BUG_REPORT.md", "ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md", "VERDICT.md"),
    "bug_find": ("ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md", "VERDICT.md"),
    "adversarial_bug_find": ("DOC_REVIEW.md", "VERDICT.md"),
    "doc_review": ("VERDICT.md",),
    "referee": (),
    COMPLETE: (),
    HUMAN: (),
}

# Files that are metadata, never artifacts, never forbidden.
NON_ARTIFACTS = frozenset({".state", "VRAM_CONFIG.md", "PARENT_SPEC.md", "REVIEW.md", ".state.tmp"})


class Need(Enum):
    """What an edge needs besides the forbidden-artifact check."""

    NOTHING = "nothing"
    ARTIFACT = "artifact"  # the leaving phase's artifact must exist
    VERDICT_PASS = "verdict_pass"
    VERDICT_FAIL = "verdict_fail"  # FAIL or NEEDS_REVIEW
    SUBTASKS_COMPLETE = "subtasks_complete"
    ESCALATION = "escalation"  # stopping is always allowed


def _edges() -> dict[tuple[str, str], Need]:
    edges: dict[tuple[str, str], Need] = {(NEW, "research"): Need.NOTHING}
    for p in SIGNOFF_PHASES:
        edges[(p, f"{p}:{AWAITING}")] = Need.ARTIFACT
    edges[(f"research:{APPROVED}", "decomposition")] = Need.NOTHING
    edges[(f"research:{APPROVED}", "design")] = Need.NOTHING
    edges[(f"research:{APPROVED}", "implement")] = Need.NOTHING
    # A decomposed parent waits while its sub-tasks run, then completes when all are done.
    edges[(f"decomposition:{APPROVED}", COMPLETE)] = Need.SUBTASKS_COMPLETE
    edges[(f"design:{APPROVED}", "test_design")] = Need.NOTHING
    edges[(f"design:{APPROVED}", "implement")] = Need.NOTHING
    edges[(f"test_design:{APPROVED}", "implement")] = Need.NOTHING
    for a, b in pairwise(WORK_PHASES):
        edges[(a, b)] = Need.ARTIFACT
    edges[("referee", COMPLETE)] = Need.VERDICT_PASS
    for p in PHASES:
        if p not in (COMPLETE, HUMAN) and (p, HUMAN) not in edges:
            edges[(p, HUMAN)] = Need.ESCALATION
    edges[("referee", HUMAN)] = Need.ESCALATION
    return edges


EDGES: dict[tuple[str, str], Need] = _edges()


def base(phase: str) -> str:
    """`design:approved` -> `design`."""
    return phase.split(":", 1)[0]


def is_phase(value: str) -> bool:
    return value in PHASES


def is_awaiting(phase: str) -> bool:
    return phase.endswith(f":{AWAITING}")


def edge(current: str, target: str) -> Need | None:
    """The requirement of the edge current -> target, or None when no such edge exists."""
    return EDGES.get((current, target))


def successors(current: str) -> list[str]:
    """Phases reachable with `--transition` from `current`, in PHASES order."""
    return [t for t in PHASES if (current, t) in EDGES]


def forbidden_present(phase: str, present: set[str]) -> list[str]:
    """Artifacts in `present` that `phase` forbids (sorted)."""
    return sorted(set(FORBIDDEN[base(phase)]) & present)


# `[ \t]`, not `\s`: the verdict must sit on one line ("Verdict:\nPASS" is no verdict).
# A pattern string compiled by `re`'s cache on first use: the hook path imports this module
# and never reads a verdict.
_VERDICT = r"^[ \t>#*_-]*verdict[ \t*_]*:[ \t*_]*(PASS|FAIL|NEEDS[_ ]REVIEW)(?![A-Za-z0-9])"


def parse_verdict(text: str) -> str | None:
    """The verdict of VERDICT.md text: 'PASS', 'FAIL', 'NEEDS_REVIEW' or None.

    The line is `Verdict: PASS|FAIL|NEEDS_REVIEW`, case-insensitive, markdown emphasis
    allowed (`**Verdict:** PASS`). The last such line wins.
    """
    found = re.findall(_VERDICT, text, re.IGNORECASE | re.MULTILINE)
    if not found:
        return None
    return str(found[-1]).upper().replace(" ", "_")


def infer_phase(present: set[str], verdict: str | None) -> str:
    """The heuristic for legacy folders (no `.state`): the latest artifact present names the phase.

    VERDICT decides complete (PASS) or human_intervention (anything else); none -> `new`.
    """
    if "VERDICT.md" in present:
        return COMPLETE if verdict == "PASS" else HUMAN
    order = [p for p in (*SIGNOFF_PHASES, *WORK_PHASES) if p != "referee"]
    latest = NEW
    for p in order:
        if ARTIFACT[p] in present:
            latest = p
    return latest
