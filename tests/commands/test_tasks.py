"""The task phase machine through the real CLI on real task folders (README.md#tasks-phases-and-sign-offs)."""

from __future__ import annotations

import getpass
import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from automaton.core import phases as ph
from automaton.core.chain import verify_text
from automaton.core.names import TaskRef
from automaton.store import chainlog
from automaton.store.key import load_key
from automaton.store.layout import Project
from tests.helpers import Result, run_cli
from tests.helpers import seed_task as seed


def cli(root: Path, *args: str, tty: bool = False) -> Result:
    return run_cli(*args, "--project", str(root), tty=tty)




def folder_of(root: Path, ref: str) -> Path:
    return Project(root).task_dir(TaskRef.parse(ref))


def state_of(root: Path, ref: str) -> str:
    return (folder_of(root, ref) / ".state").read_text()[:-1]


def log_of(root: Path, ref: str) -> list[tuple[str, str, dict[str, str]]]:
    check = verify_text((folder_of(root, ref) / ".state.log").read_text(), load_key(create=False))
    assert check.ok, check.error
    return [(line.event, line.state, line.fields) for line in check.lines]


def one_line(res: Result) -> str:
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.err, res.err
    return lines[0]


def natural(phase: str) -> dict[str, str]:
    """The artifact a task at `phase` has produced (what the edges leaving it need)."""
    if phase == "referee":
        return {"VERDICT.md": "# Verdict\n\nVerdict: PASS\n"}
    b = ph.base(phase)
    return {ph.ARTIFACT[b]: f"{b}\n"} if b in ph.ARTIFACT else {}


# ---------------------------------------------------------------- the matrix, edge by edge

PAIRS = [(a, b) for a in ph.PHASES for b in ph.PHASES]


@pytest.mark.parametrize(("current", "target"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_transition_matrix(tmp_path: Path, current: str, target: str) -> None:
    seed(tmp_path, "t", current, natural(current))
    if current == "decomposition:approved":
        seed(tmp_path, "t/sub", "complete")
    before = len(log_of(tmp_path, "t"))
    res = cli(tmp_path, "--transition", target, "--task", "t")
    if ph.edge(current, target) is not None:
        assert res.code == 0, res.err
        assert state_of(tmp_path, "t") == target
        events = log_of(tmp_path, "t")
        assert len(events) == before + 1
        assert events[-1][0] == "TRANSITION" and events[-1][2]["from"] == current
        moved = target == "complete"
        assert (tmp_path / "tasks" / "complete" / "t").is_dir() is moved
        assert (tmp_path / "tasks" / "t").exists() is not moved
    else:
        assert res.code == 1, res.out + res.err
        msg = one_line(res)
        assert "no transition" in msg or "sign-off" in msg, msg
        assert state_of(tmp_path, "t") == current
        assert len(log_of(tmp_path, "t")) == before
    assert not list(tmp_path.rglob(".state.tmp"))


def test_unknown_target_phase_is_bad_input(tmp_path: Path) -> None:
    seed(tmp_path, "t", "new")
    res = cli(tmp_path, "--transition", "researching", "--task", "t")
    assert res.code == 2 and "unknown phase 'researching'; did you mean research?" in one_line(res)
    res = cli(tmp_path, "--transition", "zzz", "--task", "t")
    assert res.code == 2 and "unknown phase 'zzz': one of " in one_line(res)


@pytest.mark.parametrize("task", ["nope", "Bad_Name", "../x", "a/b/c"])
def test_unknown_or_invalid_task_is_bad_input(tmp_path: Path, task: str) -> None:
    (tmp_path / "tasks").mkdir()
    res = cli(tmp_path, "--transition", "research", "--task", task)
    assert res.code == 2
    one_line(res)
    assert list((tmp_path / "tasks").iterdir()) == []  # no lock file for a task that is not there


# ---------------------------------------------------------------- sign-offs

@pytest.mark.parametrize("x", ph.SIGNOFF_PHASES)
def test_signoff_cycle(tmp_path: Path, x: str, approver: str) -> None:
    art = ph.ARTIFACT[x]
    seed(tmp_path, "t", x)
    res = cli(tmp_path, "--transition", f"{x}:awaiting_approval", "--task", "t")
    assert res.code == 1 and f"needs {tmp_path / 'tasks' / 't' / art}" in one_line(res)
    (tmp_path / "tasks" / "t" / art).write_text("draft\n")
    assert cli(tmp_path, "--transition", f"{x}:awaiting_approval", "--task", "t").code == 0

    res = cli(tmp_path, "--transition", f"{x}:approved", "--task", "t")
    assert res.code == 1 and "--approve --task t" in one_line(res)
    for nxt in [p for p in ph.successors(f"{x}:approved") if p != "human_intervention"]:
        res = cli(tmp_path, "--transition", nxt, "--task", "t")
        assert res.code == 1 and "past a sign-off" in one_line(res), nxt
    assert state_of(tmp_path, "t") == f"{x}:awaiting_approval"

    res = cli(tmp_path, "--approve", "--task", "t", "--json")
    assert res.code == 0, res.err
    assert res.json == {"task": "t", "from": f"{x}:awaiting_approval", "to": f"{x}:approved", "by": approver}
    event, state, fields = log_of(tmp_path, "t")[-1]
    assert (event, state, fields["by"]) == ("APPROVED", f"{x}:approved", approver)
    digest = hashlib.sha256(b"draft\n").hexdigest()
    assert fields["bind"] == f"{art}:{digest}"


@pytest.mark.parametrize("phase", [p for p in ph.PHASES if not ph.is_awaiting(p)])
def test_approve_needs_an_awaiting_phase(tmp_path: Path, phase: str, approver: str) -> None:
    seed(tmp_path, "t", phase, natural(phase))
    res = cli(tmp_path, "--approve", "--task", "t")
    assert res.code == 1 and "awaiting_approval" in one_line(res)
    assert state_of(tmp_path, "t") == phase


def test_approve_refuses_when_the_artifact_is_missing(tmp_path: Path, approver: str) -> None:
    seed(tmp_path, "t", "design:awaiting_approval")
    res = cli(tmp_path, "--approve", "--task", "t")
    assert res.code == 1 and "DESIGN.md is missing" in one_line(res)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_approve_refuses_an_artifact_that_is_no_regular_file_without_reading_it(tmp_path: Path, approver: str,
                                                                                kind: str) -> None:
    # An agent can put a FIFO (a plain read waits forever) or a link to /dev/zero (a plain read
    # fills memory) where the artifact goes: the sign-off refuses it at once (no regular file,
    # no artifact).
    seed(tmp_path, "t", "design:awaiting_approval")
    art = folder_of(tmp_path, "t") / "DESIGN.md"
    if kind == "fifo":
        os.mkfifo(art)
    else:
        art.symlink_to("/dev/zero")
    res = cli(tmp_path, "--approve", "--task", "t")
    assert res.code == 1 and "nothing to approve" in one_line(res)
    assert state_of(tmp_path, "t") == "design:awaiting_approval"


def test_approve_without_a_human_is_refused(tmp_path: Path) -> None:
    seed(tmp_path, "t", "research:awaiting_approval", {"SPEC.md": "s"})
    res = cli(tmp_path, "--approve", "--task", "t")
    assert res.code == 1 and "AUTOMATON_APPROVER" in one_line(res)
    assert state_of(tmp_path, "t") == "research:awaiting_approval"
    res = cli(tmp_path, "--approve", "--task", "t", "--to", "implement")
    assert res.code == 1 and state_of(tmp_path, "t") == "research:awaiting_approval"


def test_approve_from_a_terminal(tmp_path: Path) -> None:
    seed(tmp_path, "t", "research:awaiting_approval", {"SPEC.md": "s"})
    res = cli(tmp_path, "--approve", "--task", "t", tty=True)
    assert res.code == 0, res.err
    assert state_of(tmp_path, "t") == "research:approved"
    assert log_of(tmp_path, "t")[-1][2]["by"] == getpass.getuser()


# ---------------------------------------------------------------- required artifacts

ARTIFACT_EDGES = [e for e, need in ph.EDGES.items() if need is ph.Need.ARTIFACT]


@pytest.mark.parametrize(("current", "target"), ARTIFACT_EDGES)
def test_required_artifact(tmp_path: Path, current: str, target: str) -> None:
    art = ph.ARTIFACT[ph.base(current)]
    folder = seed(tmp_path, "t", current)
    res = cli(tmp_path, "--transition", target, "--task", "t")
    assert res.code == 1 and f"needs {folder / art}" in one_line(res)
    (folder / art).write_text("done\n")
    assert cli(tmp_path, "--transition", target, "--task", "t").code == 0
    assert state_of(tmp_path, "t") == target


@pytest.mark.parametrize(("verdict", "ok"), [
    (None, False), ("Verdict: FAIL\n", False), ("Verdict: NEEDS_REVIEW\n", False), ("no verdict line\n", False),
    ("Verdict: PASS\n", True), ("**Verdict:** pass\n", True),
])
def test_referee_to_complete_needs_a_pass_verdict(tmp_path: Path, verdict: str | None, ok: bool) -> None:
    seed(tmp_path, "t", "referee", {} if verdict is None else {"VERDICT.md": verdict})
    res = cli(tmp_path, "--transition", "complete", "--task", "t")
    assert res.code == (0 if ok else 1), res.err
    if not ok:
        assert "Verdict: PASS" in one_line(res)
    assert state_of(tmp_path, "t") == ("complete" if ok else "referee")


@pytest.mark.parametrize("verdict", [None, "Verdict: FAIL\n", "Verdict: NEEDS_REVIEW\n"])
def test_referee_may_always_escalate(tmp_path: Path, verdict: str | None) -> None:
    seed(tmp_path, "t", "referee", {} if verdict is None else {"VERDICT.md": verdict})
    assert cli(tmp_path, "--transition", "human_intervention", "--task", "t").code == 0
    assert state_of(tmp_path, "t") == "human_intervention"


# ---------------------------------------------------------------- forbidden artifacts (row by row)

LEAVING = {
    "new": "research", "research": "research:awaiting_approval",
    "decomposition": "decomposition:awaiting_approval", "design": "design:awaiting_approval",
    "test_design": "test_design:awaiting_approval", "implement": "bug_find",
    "bug_find": "adversarial_bug_find", "adversarial_bug_find": "doc_review", "doc_review": "referee",
}
ROWS = [(p, art) for p, arts in ph.FORBIDDEN.items() for art in arts]


@pytest.mark.parametrize(("phase", "art"), ROWS, ids=[f"{p}-{a}" for p, a in ROWS])
def test_forbidden_artifact_row(tmp_path: Path, phase: str, art: str) -> None:
    seed(tmp_path, "t", phase, {**natural(phase), art: "too early\n"})
    res = cli(tmp_path, "--transition", LEAVING[phase], "--task", "t")
    msg = one_line(res)
    assert res.code == 1 and "forbidden artifacts" in msg and art in msg
    assert "seed" not in msg.lower() and "§" not in msg  # no internal design references
    assert state_of(tmp_path, "t") == phase
    rep = cli(tmp_path, "--validate-folder", "--task", "t", "--json")
    assert rep.code == 1 and art in rep.json["tasks"][0]["violations"][0]
    # Stopping is always allowed, forbidden files or not.
    assert cli(tmp_path, "--transition", "human_intervention", "--task", "t").code == 0


def test_refusal_lists_every_offending_file(tmp_path: Path) -> None:
    seed(tmp_path, "t", "research", {"SPEC.md": "s", "VERDICT.md": "v", "DESIGN.md": "d"})
    msg = one_line(cli(tmp_path, "--transition", "research:awaiting_approval", "--task", "t"))
    assert "DESIGN.md, VERDICT.md" in msg


@pytest.mark.parametrize("phase", ["referee", "complete", "human_intervention"])
def test_rows_without_forbidden_artifacts(tmp_path: Path, phase: str) -> None:
    every = {a: "Verdict: PASS\n" for a in ph.ARTIFACTS}
    seed(tmp_path, "t", phase, every)
    assert cli(tmp_path, "--validate-folder", "--task", "t").code == 0
    if phase == "referee":
        assert cli(tmp_path, "--transition", "complete", "--task", "t").code == 0


def test_non_artifacts_never_block(tmp_path: Path) -> None:
    meta = {"VRAM_CONFIG.md": "v", "PARENT_SPEC.md": "p", "REVIEW.md": "r"}
    folder = seed(tmp_path, "t", "new", meta)
    (folder / ".state.tmp").write_text("junk")
    assert cli(tmp_path, "--validate-folder", "--task", "t").code == 0
    assert cli(tmp_path, "--transition", "research", "--task", "t").code == 0
    assert not (folder / ".state.tmp").exists()


# ---------------------------------------------------------------- corrupt and tampered .state

CORRUPT = [b"", b"\n", b"res", b"research:appr", b"design", b"bogus\n", b"new\nnew\n", b"\xff\xfe\n"]


@pytest.mark.parametrize("data", CORRUPT)
@pytest.mark.parametrize("verb", [
    ("--transition", "research", "--task", "t"), ("--phase", "--task", "t"),
    ("--can-edit", "--file", "tasks/t/SPEC.md", "--task", "t"), ("--approve", "--task", "t"),
])
def test_corrupt_state_is_exit_2_naming_the_file(tmp_path: Path, data: bytes, verb: tuple[str, ...],
                                                 approver: str) -> None:
    folder = seed(tmp_path, "t", "new")
    (folder / ".state").write_bytes(data)
    log_before = (folder / ".state.log").read_bytes()
    res = cli(tmp_path, *verb)
    assert res.code == 2, res.out + res.err
    assert str(folder / ".state") in one_line(res)
    assert (folder / ".state").read_bytes() == data  # never replaced by a default
    assert (folder / ".state.log").read_bytes() == log_before


def test_a_state_that_cannot_be_replaced_refuses_the_transition_with_nothing_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An immutable `.state` (chattr +i; opening it for writing is refused with EPERM): exit 1,
    one line naming `.state` (not its temp file), and the task did not move."""
    folder = seed(tmp_path, "t", "new")
    state, log_before = folder / ".state", (folder / ".state.log").read_bytes()
    real_open = os.open

    def immutable(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if str(path) == str(state) and flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(1, "Operation not permitted", str(path))
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", immutable)
    res = cli(tmp_path, "--transition", "research", "--task", "t")
    assert res.code == 1, res.out + res.err
    line = one_line(res)
    assert f"cannot replace {state}: operation not permitted" in line and "nothing was changed" in line, line
    assert (folder / ".state.log").read_bytes() == log_before
    assert sorted(p.name for p in folder.iterdir()) == [".state", ".state.log"]
    monkeypatch.setattr(os, "open", real_open)
    assert cli(tmp_path, "--phase", "--task", "t").out.strip() == "new"


def test_corrupt_state_is_resealed_by_a_human(tmp_path: Path, approver: str) -> None:
    folder = seed(tmp_path, "t", "research", {"SPEC.md": "s"})
    (folder / ".state").write_bytes(b"")
    res = cli(tmp_path, "--approve", "--task", "t", "--to", "research")
    assert res.code == 0, res.err
    assert state_of(tmp_path, "t") == "research"
    event, _, fields = log_of(tmp_path, "t")[-1]
    assert event == "RESEALED" and fields["from"] == "corrupt" and fields["by"] == approver


def test_hand_edit_is_detected_and_resealed(tmp_path: Path, approver: str) -> None:
    assert cli(tmp_path, "--create-task", "t").code == 0
    assert cli(tmp_path, "--transition", "research", "--task", "t").code == 0
    folder = tmp_path / "tasks" / "t"
    (folder / "SPEC.md").write_text("spec\n")
    (folder / "IMPLEMENTATION.md").write_text("impl\n")
    (folder / ".state").write_text("implement\n")  # the agent skips every sign-off

    res = cli(tmp_path, "--transition", "bug_find", "--task", "t")
    msg = one_line(res)
    assert res.code == 1 and str(folder / ".state") in msg and "edited outside automaton" in msg
    audit = cli(tmp_path, "--audit", "--json")
    assert audit.code == 1
    row = next(r for r in audit.json["tasks"] if r["task"] == "t")
    assert row["violations"][0].startswith("TAMPERED")
    assert cli(tmp_path, "--can-edit", "--file", "src/x.py", "--task", "t").code == 1
    res = cli(tmp_path, "--approve", "--task", "t", "--to", "implement")
    assert res.code == 0, res.err
    assert state_of(tmp_path, "t") == "implement"
    assert log_of(tmp_path, "t")[-1][0] == "RESEALED"
    assert cli(tmp_path, "--audit").code == 0
    assert cli(tmp_path, "--transition", "bug_find", "--task", "t").code == 0


def test_reseal_checks_forbidden_artifacts_of_the_target(tmp_path: Path, approver: str) -> None:
    folder = seed(tmp_path, "t", "research", {"SPEC.md": "s", "VERDICT.md": "x"})
    (folder / ".state").write_text("design\n")
    res = cli(tmp_path, "--approve", "--task", "t", "--to", "implement")
    assert res.code == 1 and "VERDICT.md" in one_line(res)
    assert (folder / ".state").read_text() == "design\n"


def test_broken_chain_is_kept_as_evidence_on_reseal(tmp_path: Path, approver: str) -> None:
    folder = seed(tmp_path, "t", "new")
    chainlog.commit(folder / ".state", folder / ".state.log", b"research\n", "research", "TRANSITION", {})
    log = folder / ".state.log"
    broken = log.read_text().replace("SEEDED", "FORGED")
    log.write_text(broken)
    assert cli(tmp_path, "--phase", "--task", "t").code == 1
    assert cli(tmp_path, "--approve", "--task", "t", "--to", "research").code == 0
    assert (folder / ".state.log.broken").read_text() == broken
    assert [e for e, _, _ in log_of(tmp_path, "t")] == ["RESEALED"]
    assert cli(tmp_path, "--transition", "human_intervention", "--task", "t").code == 0


@pytest.mark.parametrize("damage", ["no_log", "deleted_state"])
def test_state_without_log_or_log_without_state_is_tampered(tmp_path: Path, damage: str, approver: str) -> None:
    folder = seed(tmp_path, "t", "research")
    (folder / (".state.log" if damage == "no_log" else ".state")).unlink()
    res = cli(tmp_path, "--transition", "human_intervention", "--task", "t")
    msg = one_line(res)
    # a deleted log is older than its anchor (store/anchor.py)
    assert res.code == 1 and ("the log was deleted" if damage == "no_log" else "was deleted") in msg
    assert cli(tmp_path, "--approve", "--task", "t", "--to", "research").code == 0
    assert state_of(tmp_path, "t") == "research"


def test_approve_to_only_leaves_human_intervention(tmp_path: Path, approver: str) -> None:
    seed(tmp_path, "t", "design", {"SPEC.md": "s"})
    res = cli(tmp_path, "--approve", "--task", "t", "--to", "implement")
    assert res.code == 1 and "only leaves human_intervention" in one_line(res)
    assert cli(tmp_path, "--transition", "human_intervention", "--task", "t").code == 0
    res = cli(tmp_path, "--approve", "--task", "t", "--to", "design", "--json")
    assert res.code == 0 and res.json["event"] == "APPROVED" and res.json["from"] == "human_intervention"
    assert "SPEC.md:" in log_of(tmp_path, "t")[-1][2]["bind"]


# ---------------------------------------------------------------- approvals bind to content

def _approved_design(root: Path, approver: str) -> Path:
    folder = seed(root, "t", "design:awaiting_approval", {"SPEC.md": "s", "DESIGN.md": "d1\n"})
    assert cli(root, "--approve", "--task", "t").code == 0
    return folder


def test_changed_artifact_at_approved_demotes_to_awaiting(tmp_path: Path, approver: str) -> None:
    folder = _approved_design(tmp_path, approver)
    (folder / "DESIGN.md").write_text("d2\n")
    res = cli(tmp_path, "--phase", "--task", "t")
    assert res.code == 0 and res.out.strip() == "design:awaiting_approval"
    assert "DESIGN.md changed" in res.err
    event, state, fields = log_of(tmp_path, "t")[-1]
    assert (event, state, fields["file"], fields["from"]) == (
        "DEMOTED", "design:awaiting_approval", "DESIGN.md", "design:approved")
    assert cli(tmp_path, "--approve", "--task", "t").code == 0  # the human re-approves the new text
    assert cli(tmp_path, "--transition", "implement", "--task", "t").code == 0


def test_changed_artifact_after_moving_on_goes_to_the_human(tmp_path: Path, approver: str) -> None:
    folder = _approved_design(tmp_path, approver)
    assert cli(tmp_path, "--transition", "implement", "--task", "t").code == 0
    (folder / "DESIGN.md").unlink()
    (folder / "IMPLEMENTATION.md").write_text("i")
    res = cli(tmp_path, "--transition", "bug_find", "--task", "t")
    assert res.code == 1
    msg = one_line(res)
    assert "DESIGN.md changed" in msg and "human_intervention" in msg
    event, state, fields = log_of(tmp_path, "t")[-1]
    assert (event, state, fields["file"]) == ("DEMOTED", "human_intervention", "DESIGN.md")
    assert cli(tmp_path, "--audit").code == 0  # demotion applied: consistent again


# ---------------------------------------------------------------- sub-tasks and completion

def test_subtasks(tmp_path: Path, approver: str) -> None:
    seed(tmp_path, "p", "decomposition", {"SPEC.md": "parent spec\n", "DECOMPOSITION.md": "d"})
    res = cli(tmp_path, "--create-task", "s1", "--parent", "p")
    assert res.code == 1 and "decomposition:approved" in one_line(res)
    assert not (tmp_path / "tasks" / "p" / "s1").exists()
    assert cli(tmp_path, "--create-task", "s1", "--parent", "nope").code == 2
    assert cli(tmp_path, "--transition", "decomposition:awaiting_approval", "--task", "p").code == 0
    assert cli(tmp_path, "--approve", "--task", "p").code == 0

    for sub in ("s1", "s2"):
        res = cli(tmp_path, "--create-task", sub, "--parent", "p", "--json")
        assert res.code == 0 and res.json["task"] == f"p/{sub}" and res.json["phase"] == "new"
        assert (tmp_path / "tasks" / "p" / sub / "PARENT_SPEC.md").read_text() == "parent spec\n"
    assert cli(tmp_path, "--create-task", "s1", "--parent", "p").code == 2  # exists
    assert cli(tmp_path, "--create-task", "deeper", "--parent", "p/s1").code == 2
    assert cli(tmp_path, "--phase", "--task", "p/s1").out.strip() == "new"
    assert cli(tmp_path, "--transition", "research", "--task", "p/s1").code == 0
    assert state_of(tmp_path, "p/s1") == "research"

    res = cli(tmp_path, "--transition", "complete", "--task", "p")
    assert res.code == 1 and "s1, s2" in one_line(res)
    for sub in ("s1", "s2"):
        sub_dir = tmp_path / "tasks" / "p" / sub
        chainlog.commit(sub_dir / ".state", sub_dir / ".state.log", b"referee\n", "referee", "SEEDED", {})
        (sub_dir / "VERDICT.md").write_text("Verdict: PASS\n")
        assert cli(tmp_path, "--transition", "complete", "--task", f"p/{sub}").code == 0
        assert sub_dir.is_dir()  # sub-tasks stay inside their parent
        if sub == "s1":
            assert "s2" in one_line(cli(tmp_path, "--transition", "complete", "--task", "p"))
    assert cli(tmp_path, "--transition", "complete", "--task", "p").code == 0
    assert not (tmp_path / "tasks" / "p").exists()
    assert (tmp_path / "tasks" / "complete" / "p" / "s2" / ".state").read_text() == "complete\n"
    assert cli(tmp_path, "--phase", "--task", "p/s2").out.strip() == "complete"
    assert cli(tmp_path, "--audit").code == 0


def test_parent_with_no_subtasks_cannot_complete(tmp_path: Path) -> None:
    seed(tmp_path, "p", "decomposition:approved", {"DECOMPOSITION.md": "d"})
    assert "no sub-tasks" in one_line(cli(tmp_path, "--transition", "complete", "--task", "p"))


def test_completed_task_moves_and_its_name_stays_taken(tmp_path: Path) -> None:
    seed(tmp_path, "t", "referee", {"VERDICT.md": "Verdict: PASS\n"})
    res = cli(tmp_path, "--transition", "complete", "--task", "t")
    assert res.code == 0 and "tasks/complete/t" in res.out
    assert (tmp_path / "tasks" / "complete" / "t" / ".state").read_text() == "complete\n"
    assert not (tmp_path / "tasks" / "t").exists()
    assert cli(tmp_path, "--phase", "--task", "t").out.strip() == "complete"
    assert cli(tmp_path, "--create-task", "t").code == 2


def test_interrupted_move_to_complete_is_finished(tmp_path: Path) -> None:
    seed(tmp_path, "t", "complete")  # logged complete, folder not moved yet
    res = cli(tmp_path, "--phase", "--task", "t")
    assert res.code == 0 and (tmp_path / "tasks" / "complete" / "t").is_dir()
    assert not (tmp_path / "tasks" / "t").exists()


def test_create_task(tmp_path: Path) -> None:
    res = cli(tmp_path, "--create-task", "fix-login", "--json")
    assert res.code == 0 and res.json == {"task": "fix-login", "phase": "new",
                                          "path": str(tmp_path / "tasks" / "fix-login")}
    assert state_of(tmp_path, "fix-login") == "new"
    assert [e for e, _, _ in log_of(tmp_path, "fix-login")] == ["CREATED"]
    assert cli(tmp_path, "--create-task", "fix-login").code == 2
    for bad in ("Fix", "complete", "a/b", "x\n"):
        res = cli(tmp_path, "--create-task", bad)
        assert res.code == 2
        one_line(res)


# ---------------------------------------------------------------- legacy folders

def test_legacy_folder_past_a_sign_off_waits_for_a_human(tmp_path: Path, approver: str) -> None:
    folder = tmp_path / "tasks" / "old"
    folder.mkdir(parents=True)
    (folder / "SPEC.md").write_text("s")
    (folder / "DESIGN.md").write_text("d")
    res = cli(tmp_path, "--phase", "--task", "old")
    assert res.code == 0
    assert "artifacts suggest 'design'" in res.out and "--approve --task old --to design" in res.out
    assert res.out.strip().splitlines()[-1] == "human_intervention"
    assert log_of(tmp_path, "old") == [("MIGRATED", "human_intervention",
                                        {"task": "old", "inferred_from": "artifacts", "inferred": "design"})]
    assert cli(tmp_path, "--approve", "--task", "old", "--to", "design").code == 0
    assert state_of(tmp_path, "old") == "design"


@pytest.mark.parametrize("files, verdict", [
    (["SPEC.md", "DESIGN.md", "TEST_PLAN.md", "IMPLEMENTATION.md"], None),
    (["SPEC.md", "IMPLEMENTATION.md", "BUG_REPORT.md", "ADVERSARIAL_BUG_REPORT.md", "DOC_REVIEW.md",
      "VERDICT.md"], "Verdict: PASS"),
])
def test_hand_made_folder_never_reaches_a_late_phase_or_complete(tmp_path: Path, files: list[str],
                                                                 verdict: str | None) -> None:
    folder = tmp_path / "tasks" / "forged"
    folder.mkdir(parents=True)
    for name in files:
        (folder / name).write_text(verdict if name == "VERDICT.md" and verdict else "x")
    res = cli(tmp_path, "--phase", "--task", "forged")
    assert res.code == 0 and res.out.strip().splitlines()[-1] == "human_intervention"
    assert (folder / ".state").read_text() == "human_intervention\n"
    assert not (tmp_path / "tasks" / "complete" / "forged").exists()


def test_legacy_folder_in_research_migrates_freely(tmp_path: Path) -> None:
    folder = tmp_path / "tasks" / "old"
    folder.mkdir(parents=True)
    (folder / "SPEC.md").write_text("s")
    res = cli(tmp_path, "--phase", "--task", "old")
    assert res.code == 0 and res.out.strip().splitlines()[-1] == "research"
    assert log_of(tmp_path, "old")[0][:2] == ("MIGRATED", "research")


def test_legacy_folder_is_migrated_by_transition(tmp_path: Path) -> None:
    (tmp_path / "tasks" / "old").mkdir(parents=True)
    res = cli(tmp_path, "--transition", "research", "--task", "old")
    assert res.code == 0 and "migrated" in res.out
    assert [e for e, _, _ in log_of(tmp_path, "old")] == ["MIGRATED", "TRANSITION"]


def test_legacy_refusal_still_says_it_migrated(tmp_path: Path) -> None:
    (tmp_path / "tasks" / "old").mkdir(parents=True)
    res = cli(tmp_path, "--transition", "implement", "--task", "old")
    assert res.code == 1 and "migrated old" in one_line(res)
    assert state_of(tmp_path, "old") == "new"


# ---------------------------------------------------------------- crash safety

CRASH = textwrap.dedent("""\
    import os, sys
    import automaton.store.chainlog as cl
    point = sys.argv[1]
    if point == "before_log":
        cl.append_line = lambda *a, **k: os._exit(9)
    else:
        cl.publish = lambda *a, **k: os._exit(9)
    from automaton.cli.main import main
    sys.exit(main(sys.argv[2:]))
    """)


def crash(tmp_path: Path, point: str, *args: str) -> int:
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    done = subprocess.run([sys.executable, str(script), point, *args, "--project", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    return done.returncode


def test_killed_between_log_and_rename_rolls_forward(tmp_path: Path) -> None:
    folder = seed(tmp_path, "t", "new")
    assert crash(tmp_path, "before_rename", "--transition", "research", "--task", "t") == 9
    assert (folder / ".state").read_text() == "new\n"
    assert (folder / ".state.tmp").read_text() == "research\n"
    audit = cli(tmp_path, "--audit", "--json")  # read-only: sees the logged phase, writes nothing
    assert audit.code == 0 and audit.json["tasks"][0]["phase"] == "research"
    assert (folder / ".state.tmp").exists()
    res = cli(tmp_path, "--phase", "--task", "t")
    assert res.code == 0 and res.out.strip() == "research"
    assert (folder / ".state").read_text() == "research\n" and not (folder / ".state.tmp").exists()
    assert [s for _, s, _ in log_of(tmp_path, "t")] == ["new", "research"]


def test_killed_before_the_log_line_keeps_the_old_state(tmp_path: Path) -> None:
    folder = seed(tmp_path, "t", "new")
    assert crash(tmp_path, "before_log", "--transition", "research", "--task", "t") == 9
    assert (folder / ".state.tmp").exists()
    assert cli(tmp_path, "--audit").code == 0
    res = cli(tmp_path, "--phase", "--task", "t")
    assert res.out.strip() == "new" and not (folder / ".state.tmp").exists()
    assert cli(tmp_path, "--transition", "research", "--task", "t").code == 0
    assert [s for _, s, _ in log_of(tmp_path, "t")] == ["new", "research"]


def test_killed_during_create_is_consistent(tmp_path: Path) -> None:
    (tmp_path / "tasks").mkdir()
    assert crash(tmp_path, "before_rename", "--create-task", "t") == 9
    folder = tmp_path / "tasks" / "t"
    assert not (folder / ".state").exists()
    assert cli(tmp_path, "--audit").code == 0
    assert cli(tmp_path, "--phase", "--task", "t").out.strip() == "new"
    assert (folder / ".state").read_text() == "new\n"


# ---------------------------------------------------------------- many real processes

RACER = textwrap.dedent("""\
    import os, sys, time
    ready, go = sys.argv[1], sys.argv[2]
    open(ready, "w").close()
    while not os.path.exists(go):
        time.sleep(0.001)
    from automaton.cli.main import main
    sys.exit(main(sys.argv[3:]))
    """)


def race(tmp_path: Path, argvs: list[list[str]]) -> list[int]:
    """Start one process per argv, release them at once, return their exit codes."""
    script = tmp_path / "racer.py"
    script.write_text(RACER)
    go = tmp_path / f"go-{os.urandom(4).hex()}"
    procs, readies = [], []
    for n, argv in enumerate(argvs):
        ready = tmp_path / f"{go.name}-ready-{n}"
        readies.append(ready)
        procs.append(subprocess.Popen([sys.executable, str(script), str(ready), str(go), *argv,
                                       "--project", str(tmp_path)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    while not all(r.exists() for r in readies):
        if any(p.poll() is not None for p in procs):
            break
        os.sched_yield()
    go.touch()
    codes = []
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert b"Traceback" not in err and b"internal error" not in err, err
        codes.append(p.returncode)
    return codes


def test_parallel_transitions_have_one_winner_per_step(tmp_path: Path) -> None:
    folder = seed(tmp_path, "t", "new")
    (folder / "SPEC.md").unlink(missing_ok=True)
    steps = ["research", "research:awaiting_approval"]
    for step in steps:
        if step == "research:awaiting_approval":
            (folder / "SPEC.md").write_text("s")
        codes = race(tmp_path, [["--transition", step, "--task", "t"]] * 6)
        assert sorted(codes) == [0, 1, 1, 1, 1, 1], codes
        assert state_of(tmp_path, "t") == step
    assert [s for _, s, _ in log_of(tmp_path, "t")] == ["new", *steps]
    assert not (folder / ".state.tmp").exists()


def test_parallel_different_targets_one_winner(tmp_path: Path) -> None:
    seed(tmp_path, "t", "research:approved", {"SPEC.md": "s"})
    # From any of these winners, none of the others is a legal next step.
    targets = ["design", "implement", "decomposition"] * 2
    codes = race(tmp_path, [["--transition", t, "--task", "t"] for t in targets])
    assert codes.count(0) == 1, codes
    winner = targets[codes.index(0)]
    assert state_of(tmp_path, "t") == winner
    assert [s for _, s, _ in log_of(tmp_path, "t")] == ["research:approved", winner]


def test_parallel_completion_moves_once_and_leaves_no_ghost(tmp_path: Path) -> None:
    seed(tmp_path, "t", "referee", {"VERDICT.md": "Verdict: PASS\n"})
    codes = race(tmp_path, [["--transition", "complete", "--task", "t"]] * 6)
    assert sorted(codes) == [0, 1, 1, 1, 1, 1], codes
    assert not (tmp_path / "tasks" / "t").exists()  # no waiter recreated the moved folder
    assert state_of(tmp_path, "t") == "complete"
    assert [s for _, s, _ in log_of(tmp_path, "t")] == ["referee", "complete"]


def test_legacy_folder_with_a_pass_verdict_waits_for_a_human_then_moves(tmp_path: Path, approver: str) -> None:
    folder = tmp_path / "tasks" / "old"
    folder.mkdir(parents=True)
    (folder / "VERDICT.md").write_text("Verdict: PASS\n")
    res = cli(tmp_path, "--phase", "--task", "old", "--json")
    assert res.code == 0 and res.json == {"task": "old", "phase": "human_intervention"}
    assert cli(tmp_path, "--approve", "--task", "old", "--to", "complete").code == 0
    assert (tmp_path / "tasks" / "complete" / "old" / ".state").read_text() == "complete\n"
    assert not folder.exists()


def test_resealing_a_completed_task_elsewhere_moves_it_back(tmp_path: Path, approver: str) -> None:
    seed(tmp_path, "complete/t", "complete")
    (tmp_path / "tasks" / "complete" / "t" / ".state").write_text("referee\n")
    assert cli(tmp_path, "--approve", "--task", "t", "--to", "human_intervention").code == 0
    assert (tmp_path / "tasks" / "t" / ".state").read_text() == "human_intervention\n"
    assert not (tmp_path / "tasks" / "complete" / "t").exists()


def test_transition_json(tmp_path: Path) -> None:
    seed(tmp_path, "t", "new")
    res = cli(tmp_path, "--transition", "research", "--task", "t", "--json")
    assert res.code == 0 and res.json == {"task": "t", "from": "new", "to": "research"}
    res = cli(tmp_path, "--transition", "complete", "--task", "t", "--json")
    assert res.code == 1 and res.json["exit_code"] == 1 and "no transition research -> complete" in res.json["error"]


# ---------------------------------------------------------------- a directory where a state file belongs

@pytest.mark.parametrize("name", [".state", ".state.log", ".state.tmp"])
@pytest.mark.parametrize("verb", [("--phase",), ("--transition", "research:awaiting_approval"),
                                  ("--can-edit", "--file", "src/x.py")])
def test_a_directory_for_a_state_file_is_corrupt_state_exit_2(tmp_path: Path, name: str,
                                                               verb: tuple[str, ...]) -> None:
    folder = seed(tmp_path, "t", "research", {"SPEC.md": "s\n"})
    (folder / name).unlink(missing_ok=True)
    (folder / name).mkdir()
    res = cli(tmp_path, *verb, "--task", "t")
    assert res.code == 2, (res.code, res.err)
    msg = one_line(res)
    assert str(folder / name) in msg and "directory" in msg


def test_no_internal_design_references_in_messages() -> None:
    """User-facing strings (not docstrings, not comments, not `# …` comment lines written into
    git's info/exclude) never cite the seeds or DESIGN sections."""
    import ast
    import re

    import automaton

    pattern = re.compile(r"seed 0\d\d|DESIGN §|seed \d+ §", re.IGNORECASE)
    found = []
    for path in Path(automaton.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(node.body[0].value) for node in ast.walk(tree)
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        found += [f"{path.name}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                  and not node.value.startswith("# ") and pattern.search(node.value)]
    assert found == []
