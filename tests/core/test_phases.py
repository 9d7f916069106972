"""The phase table against README.md#tasks-phases-and-sign-offs, written out independently here."""

from __future__ import annotations

import pytest

from automaton.core import phases as ph
from automaton.core.approvals import MISSING, Demotion, demotion, format_bind, parse_bind, signoffs_passed

SEED_PHASES = [
    "new",
    "research", "research:awaiting_approval", "research:approved",
    "decomposition", "decomposition:awaiting_approval", "decomposition:approved",
    "design", "design:awaiting_approval", "design:approved",
    "test_design", "test_design:awaiting_approval", "test_design:approved",
    "implement", "bug_find", "adversarial_bug_find", "doc_review", "referee",
    "complete", "human_intervention",
]

# The forbidden artifacts of each phase, row by row.
AFTER_SPEC = ["DESIGN.md", "DECOMPOSITION.md", "TEST_PLAN.md", "IMPLEMENTATION.md", "BUG_REPORT.md",
              "ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md", "VERDICT.md"]
SEED_FORBIDDEN = {
    "new": ["SPEC.md", *AFTER_SPEC],
    "research": AFTER_SPEC,
    "decomposition": ["DESIGN.md", "TEST_PLAN.md", "IMPLEMENTATION.md", "BUG_REPORT.md",
                      "ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md", "VERDICT.md"],
    "design": ["DECOMPOSITION.md", "TEST_PLAN.md", "IMPLEMENTATION.md", "BUG_REPORT.md",
               "ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md", "VERDICT.md"],
    "test_design": ["DECOMPOSITION.md", "IMPLEMENTATION.md", "BUG_REPORT.md", "ADVERSARIAL_BUG_REPORT.md",
                    "DOC_REVIEW.md", "VERDICT.md"],
    "implement": ["BUG_REPORT.md", "ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md", "VERDICT.md"],
    "bug_find": ["ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md", "VERDICT.md"],
    "adversarial_bug_find": ["DOC_REVIEW.md", "VERDICT.md"],
    "doc_review": ["VERDICT.md"],
    "referee": [],
    "complete": [],
    "human_intervention": [],
}

N = ph.Need
# The transitions, plus the settled decisions: decomposition:approved -> complete
# when every sub-task is complete; every non-terminal phase may escalate to human_intervention.
SEED_EDGES = {
    ("new", "research"): N.NOTHING,
    ("research", "research:awaiting_approval"): N.ARTIFACT,
    ("research:approved", "decomposition"): N.NOTHING,
    ("research:approved", "design"): N.NOTHING,
    ("research:approved", "implement"): N.NOTHING,
    ("decomposition", "decomposition:awaiting_approval"): N.ARTIFACT,
    ("decomposition:approved", "complete"): N.SUBTASKS_COMPLETE,
    ("design", "design:awaiting_approval"): N.ARTIFACT,
    ("design:approved", "test_design"): N.NOTHING,
    ("design:approved", "implement"): N.NOTHING,
    ("test_design", "test_design:awaiting_approval"): N.ARTIFACT,
    ("test_design:approved", "implement"): N.NOTHING,
    ("implement", "bug_find"): N.ARTIFACT,
    ("bug_find", "adversarial_bug_find"): N.ARTIFACT,
    ("adversarial_bug_find", "doc_review"): N.ARTIFACT,
    ("doc_review", "referee"): N.ARTIFACT,
    ("referee", "complete"): N.VERDICT_PASS,
    **{(p, "human_intervention"): N.ESCALATION for p in SEED_PHASES if p not in ("complete", "human_intervention")},
}


def test_phases_are_the_seeds_in_order() -> None:
    assert list(ph.PHASES) == SEED_PHASES
    assert len(set(ph.PHASES)) == len(ph.PHASES)


def test_only_signoff_phases_have_sub_states() -> None:
    with_sub = {p.split(":")[0] for p in ph.PHASES if ":" in p}
    assert with_sub == {"research", "decomposition", "design", "test_design"}
    for p in ph.WORK_PHASES:
        assert f"{p}:awaiting_approval" not in ph.PHASES and f"{p}:approved" not in ph.PHASES
    assert not ph.is_phase("implement:approved")
    assert not ph.is_phase("research:awaiting")
    assert not ph.is_phase("")


def test_forbidden_table_is_the_seeds() -> None:
    assert {k: sorted(v) for k, v in ph.FORBIDDEN.items()} == {k: sorted(v) for k, v in SEED_FORBIDDEN.items()}


@pytest.mark.parametrize("phase", SEED_PHASES)
def test_sub_states_forbid_what_their_base_forbids(phase: str) -> None:
    everything = set(ph.ARTIFACTS) | set(ph.NON_ARTIFACTS)
    assert ph.forbidden_present(phase, everything) == sorted(SEED_FORBIDDEN[phase.split(":")[0]])


@pytest.mark.parametrize("phase", SEED_PHASES)
def test_non_artifacts_are_never_forbidden(phase: str) -> None:
    meta = {".state", "VRAM_CONFIG.md", "PARENT_SPEC.md", "REVIEW.md", ".state.tmp"}
    assert meta == ph.NON_ARTIFACTS
    assert ph.forbidden_present(phase, meta) == []


def test_edges_are_the_seeds_plus_settled_decisions() -> None:
    assert ph.EDGES == SEED_EDGES


def test_no_edge_leaves_terminal_or_human_and_none_skips_approval() -> None:
    assert ph.successors("complete") == []
    assert ph.successors("human_intervention") == []
    for p in ph.PHASES:
        if ph.is_awaiting(p):
            assert ph.successors(p) == ["human_intervention"], p
            assert ph.edge(p, p.replace("awaiting_approval", "approved")) is None


def test_every_phase_is_reachable_from_new() -> None:
    seen, todo = {"new"}, ["new"]
    approvals = {(p, p.replace("awaiting_approval", "approved")) for p in ph.PHASES if ph.is_awaiting(p)}
    while todo:
        cur = todo.pop()
        nxt = set(ph.successors(cur)) | {b for a, b in approvals if a == cur}
        for p in nxt - seen:
            seen.add(p)
            todo.append(p)
    assert seen == set(ph.PHASES)


@pytest.mark.parametrize(("text", "verdict"), [
    ("Verdict: PASS\n", "PASS"),
    ("verdict: pass", "PASS"),
    ("**Verdict:** PASS\n", "PASS"),
    ("## Verdict: FAIL\n", "FAIL"),
    ("> Verdict: needs_review", "NEEDS_REVIEW"),
    ("Verdict: NEEDS REVIEW", "NEEDS_REVIEW"),
    ("Verdict: __PASS__", "PASS"),
    ("Verdict: FAIL\nlater...\nVerdict: PASS\n", "PASS"),
    ("Verdict: PASSED", None),
    ("The verdict: PASS", None),
    ("Verdict:\nPASS", None),
    ("no verdict here", None),
    ("", None),
])
def test_parse_verdict(text: str, verdict: str | None) -> None:
    assert ph.parse_verdict(text) == verdict


@pytest.mark.parametrize(("present", "verdict", "phase"), [
    (set(), None, "new"),
    ({"SPEC.md"}, None, "research"),
    ({"SPEC.md", "DECOMPOSITION.md"}, None, "decomposition"),
    ({"SPEC.md", "DESIGN.md"}, None, "design"),
    ({"SPEC.md", "DESIGN.md", "TEST_PLAN.md"}, None, "test_design"),
    ({"SPEC.md", "IMPLEMENTATION.md"}, None, "implement"),
    ({"IMPLEMENTATION.md", "BUG_REPORT.md"}, None, "bug_find"),
    ({"ADVERSARIAL_BUG_REPORT.md"}, None, "adversarial_bug_find"),
    ({"DOC_REVIEW.md"}, None, "doc_review"),
    ({"DOC_REVIEW.md", "VERDICT.md"}, "PASS", "complete"),
    ({"VERDICT.md"}, "FAIL", "human_intervention"),
    ({"VERDICT.md"}, None, "human_intervention"),
])
def test_infer_phase_never_infers_an_approval(present: set[str], verdict: str | None, phase: str) -> None:
    assert ph.infer_phase(present, verdict) == phase
    assert ":" not in ph.infer_phase(present, verdict)


def test_bind_round_trip() -> None:
    hashes = {"SPEC.md": "a" * 64, "DESIGN.md": MISSING}
    assert parse_bind(format_bind(hashes)) == hashes
    assert parse_bind("junk SPEC.md:abc :x y:") == {"SPEC.md": "abc"}


def test_signoffs_passed() -> None:
    assert signoffs_passed("new") == []
    assert signoffs_passed("research:awaiting_approval") == []
    assert signoffs_passed("research:approved") == ["research"]
    assert signoffs_passed("implement") == ["research", "decomposition", "design", "test_design"]
    assert signoffs_passed("complete") == []
    assert signoffs_passed("human_intervention") == []


SPEC, DESIGN, HI = "SPEC.md", "DESIGN.md", "human_intervention"


@pytest.mark.parametrize(("phase", "bound", "now", "expected"), [
    # At X:approved a changed X goes back to X:awaiting_approval.
    ("design:approved", {DESIGN: "d1"}, {DESIGN: "d2"},
     Demotion("design:approved", "design:awaiting_approval", DESIGN)),
    ("research:approved", {SPEC: "s1"}, {}, Demotion("research:approved", "research:awaiting_approval", SPEC)),
    # Once the task moved past X: to the human.
    ("design", {SPEC: "s1"}, {SPEC: "s2"}, Demotion("design", HI, SPEC)),
    ("implement", {DESIGN: "d1", SPEC: "s1"}, {DESIGN: "d9", SPEC: "s1"}, Demotion("implement", HI, DESIGN)),
    ("design:awaiting_approval", {SPEC: "s1"}, {SPEC: "s2"}, Demotion("design:awaiting_approval", HI, SPEC)),
    # Unchanged, not bound, or not yet approved: nothing.
    ("implement", {SPEC: "s1"}, {SPEC: "s1"}, None),
    ("implement", {}, {SPEC: "s2"}, None),
    ("design:awaiting_approval", {DESIGN: "d1"}, {DESIGN: "d2"}, None),
    ("human_intervention", {SPEC: "s1"}, {SPEC: "s2"}, None),
    ("complete", {SPEC: "s1"}, {SPEC: "s2"}, None),
])
def test_demotion(phase: str, bound: dict[str, str], now: dict[str, str], expected: Demotion | None) -> None:
    assert demotion(phase, bound, now) == expected
