"""A cheating agent that got a write past the hooks (a `python -c` no static reading sees, or a
process of its own): the second line of defence, tamper evidence in the CLI, gates and audit.

Each test names its attempt id (SECURITY.md table). The writes here are done directly on disk,
as such an agent would; the assertions are on what the real CLI then does.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.core.chain import format_line, line_hash
from automaton.store import loops as store
from tests.helpers import Result, patched, run_cli, run_exe
from tests.redteam.conftest import Looped, bash, denied, gate, log_events, loop_dir, write

Hook = Callable[..., Result]


def cli(project: Path, *args: str, tty: bool = False) -> Result:
    return run_cli(*args, "--project", str(project), tty=tty)


def audit_flags(project: Path) -> str:
    res = cli(project, "--audit", "--json")
    assert res.code == 1, res.out  # something is flagged
    return json.dumps(res.json)


# ---- B01-B06: task `.state` and `.state.log` ------------------------------------------------------

def test_b00_a_write_no_static_reading_sees_is_caught_later(make_task: Callable[..., Path], project: Path) -> None:
    """The hook's shell analysis is best effort: a path built at run time is invisible to it.
    The write happens (for real, through a shell); the tamper check stops it from counting."""
    import subprocess
    import sys

    folder = make_task("demo", "implement")
    code = "open('tasks/demo/.st' + 'ate', 'w').write('referee' + chr(10))"
    subprocess.run(["bash", "-c", f'"{sys.executable}" -c "{code}"'], cwd=project, check=True)
    assert (folder / ".state").read_text() == "referee\n"
    res = cli(project, "--transition", "complete", "--task", "demo")
    assert res.code == 1 and "edited outside automaton" in res.err
    assert "TAMPERED" in audit_flags(project)


def test_b01_edited_state_refuses_transitions_and_edits(make_task: Callable[..., Path], project: Path,
                                                       hook: Hook) -> None:
    folder = make_task("demo", "implement")
    (folder / ".state").write_text("referee\n")  # skip bug_find .. doc_review
    (folder / "VERDICT.md").write_text("Verdict: PASS\n")
    res = cli(project, "--transition", "complete", "--task", "demo")
    assert res.code == 1 and "edited outside automaton" in res.err and ".state" in res.err
    assert "TAMPERED" in audit_flags(project)
    denied(hook(write(project, project / "src/app.py")), "tampered")
    assert cli(project, "--can-edit", "--file", "src/app.py").code == 1
    assert (folder / ".state").read_text() == "referee\n"  # nothing was written over the evidence


def test_b02_state_plus_naive_log_line_breaks_the_chain(make_task: Callable[..., Path], project: Path) -> None:
    folder = make_task("demo", "implement")
    (folder / ".state").write_text("complete\n")
    with (folder / ".state.log").open("a") as fh:
        fh.write("2026-01-01T00:00:00Z TRANSITION task=demo from=implement to=complete state=complete prev=0\n")
    res = cli(project, "--transition", "human_intervention", "--task", "demo")
    assert res.code == 1 and "hash chain broken" in res.err
    assert "hash chain broken" in audit_flags(project)


def test_b03_forged_log_line_breaks_the_chain(make_task: Callable[..., Path], project: Path) -> None:
    folder = make_task("demo", "implement")
    log = folder / ".state.log"
    text = log.read_text()
    log.write_text(text.replace("by=alice", "by=bob", 1))  # rewrite who approved
    res = cli(project, "--phase", "--task", "demo")
    assert res.code == 1 and "mac the key does not verify" in res.err  # the edited line itself
    # deleting a line in the middle is a forgery too
    lines = text.splitlines(keepends=True)
    log.write_text("".join(lines[:1] + lines[2:]))
    assert cli(project, "--phase", "--task", "demo").code == 1


def test_b04_truncated_log(make_task: Callable[..., Path], project: Path) -> None:
    folder = make_task("demo", "implement")
    log = folder / ".state.log"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-1]))  # forget the last transition: .state disagrees
    assert cli(project, "--transition", "bug_find", "--task", "demo").code == 1
    log.write_text("".join(lines)[:-10])  # cut mid-line
    res = cli(project, "--phase", "--task", "demo")
    assert res.code == 1 and "cut" in res.err
    log.write_text("")
    res = cli(project, "--phase", "--task", "demo")
    assert res.code == 1 and "rolled back to line 0" in res.err  # older than its anchor (store/anchor.py)


def test_b05_deleted_state_is_not_remigrated(make_task: Callable[..., Path], project: Path) -> None:
    folder = make_task("demo", "research:awaiting_approval")
    (folder / ".state").unlink()
    res = cli(project, "--phase", "--task", "demo")
    assert res.code == 1 and "deleted" in res.err
    assert not (folder / ".state").exists()
    assert "MIGRATED" not in (folder / ".state.log").read_text()


def test_b06_deleted_state_and_log_are_not_remigrated(make_task: Callable[..., Path], project: Path) -> None:
    """Both files gone: the folder looks legacy, and migration would infer `design` from a
    DESIGN.md the agent wrote early, skipping the research sign-off. The task's lock file
    (tasks/.state.lock-demo) shows automaton managed it, so this is tampering, not a legacy folder."""
    folder = make_task("demo", "research:awaiting_approval")
    (folder / "DESIGN.md").write_text("# design\n")
    (folder / ".state").unlink()
    (folder / ".state.log").unlink()
    for args in (("--phase",), ("--transition", "design:awaiting_approval")):
        res = cli(project, *args, "--task", "demo")
        assert res.code == 1, (args, res.out, res.err)
        assert "deleted" in res.err and "--approve --task demo --to" in res.err
        assert not (folder / ".state").exists()
    assert "TAMPERED" in audit_flags(project)


# ---- B07-B08: artifacts ---------------------------------------------------------------------------

def test_b07_future_phase_artifacts_refuse_the_transition(make_task: Callable[..., Path], project: Path) -> None:
    folder = make_task("demo", "research")
    (folder / "SPEC.md").write_text("# spec\n")
    (folder / "IMPLEMENTATION.md").write_text("done already\n")
    res = cli(project, "--transition", "research:awaiting_approval", "--task", "demo")
    assert res.code == 1 and "forbidden artifacts" in res.err and "IMPLEMENTATION.md" in res.err
    res = cli(project, "--validate-folder", "--json")
    assert res.code == 1 and "IMPLEMENTATION.md" in json.dumps(res.json)


def test_b08_editing_an_approved_spec_demotes(make_task: Callable[..., Path], project: Path, hook: Hook) -> None:
    folder = make_task("demo", "implement")
    (folder / "SPEC.md").write_text("# spec, now asking for much less\n")
    denied(hook(write(project, project / "src/app.py")), "changed after sign-off")
    res = cli(project, "--transition", "bug_find", "--task", "demo")
    assert res.code == 1 and "demoted" in res.err
    assert (folder / ".state").read_text() == "human_intervention\n"
    assert " DEMOTED " in (folder / ".state.log").read_text()


# ---- B09-B10: human acts through the CLI itself -------------------------------------------------

def test_b09_approve_without_a_terminal_is_refused(make_task: Callable[..., Path], project: Path) -> None:
    make_task("demo", "research:awaiting_approval")
    res = cli(project, "--approve", "--task", "demo")
    assert res.code == 1 and "human sign-off" in res.err
    done = run_exe("automaton", "--approve", "--task", "demo", "--project", str(project))  # stdin is a pipe
    assert done.returncode == 1 and "AUTOMATON_APPROVER" in done.stderr
    assert (project / "tasks/demo/.state").read_text() == "research:awaiting_approval\n"


def test_b10_focus_is_a_human_act(make_task: Callable[..., Path], project: Path, hook: Hook) -> None:
    make_task("demo", "research")
    make_task("wide", "implement", focus=False)
    assert cli(project, "--focus", "wide").code == 1
    # written behind automaton's back: the focus no longer matches its log, every edit is denied
    (project / ".automaton/focus").write_text("wide\n")
    denied(hook(write(project, project / "src/app.py")), "changed outside automaton")
    denied(hook(write(project, project / "tasks/demo/SPEC.md")), "changed outside automaton")


# ---- B11-B16: loop state, log and config --------------------------------------------------------

def test_b11_edited_state_loop_halts_without_lowering_counters(looped: Looped) -> None:
    proj, _ = looped(brakes={"max_iterations": 2})
    state_file = loop_dir(proj) / ".state.loop"
    data = json.loads(state_file.read_text())
    data["iteration_count"] = 0
    data["spent_usd"] = 0.0
    state_file.write_text(json.dumps(data))
    res = gate(proj)
    assert res.code == 1 and res.json["reason"] == "state_tampered"
    assert res.json["halt_reason"] == "human_intervention"
    state = store.read_state(proj, "demo")
    assert state.status == "halted" and state.iteration_count == 1  # the logged value wins
    # the agent cannot lift the halt; a human sees it in --audit
    assert run_cli("--approve", "--loop", "demo", "--project", str(proj.root)).code == 1
    assert "HALTED" in audit_flags(proj.root)


def test_b12_restored_older_state_loop(looped: Looped) -> None:
    proj, _ = looped()
    state_file = loop_dir(proj) / ".state.loop"
    old = state_file.read_bytes()
    from automaton.runner.tick import tick

    assert tick(proj, "demo").code == 0  # iteration 2
    state_file.write_bytes(old)  # back to iteration 1
    res = gate(proj)
    assert res.code == 1 and res.json["reason"] == "state_tampered"
    assert store.read_state(proj, "demo").iteration_count == 2


def test_b13_forged_loop_log(looped: Looped) -> None:
    proj, _ = looped()
    log = loop_dir(proj) / ".state.log"
    text = log.read_text()
    log.write_text(re.sub(r"template=tpl-demo", "template=ci-triage", text, count=1))  # an early line
    res = gate(proj)
    assert res.code == 1 and res.json["reason"] == "state_tampered" and "line 1" in res.json["halt_detail"]
    assert "does not verify" in res.json["halt_detail"]  # the edited line's own mac
    assert (loop_dir(proj) / ".state.log.broken").is_file()  # the forged log is kept as evidence


def test_b13_truncated_loop_log(looped: Looped) -> None:
    proj, _ = looped()
    log = loop_dir(proj) / ".state.log"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:1]))
    res = gate(proj)
    assert res.code == 1 and res.json["reason"] == "state_tampered"
    assert store.read_state(proj, "demo").status == "halted"


@pytest.mark.parametrize("edit", [
    lambda c: c["brakes"].update(max_iterations=10_000),
    lambda c: c["brakes"].update(max_budget_usd=5000.0),
    lambda c: c["blast_radius"].update(file_scope=["**"]),
    lambda c: c["blast_radius"].update(use_worktree=False),
    lambda c: c.update(description=c["description"] + " "),
])
def test_b14_edited_loop_json_halts(looped: Looped, edit: Callable[[dict[str, Any]], None]) -> None:
    proj, _ = looped()
    path = loop_dir(proj) / "loop.json"
    config = json.loads(path.read_text())
    edit(config)
    path.write_text(json.dumps(config))
    res = gate(proj)
    assert res.code == 1 and res.json["halt_reason"] == "human_intervention"
    assert res.json["halt_detail"] == "config_changed"
    assert "HALT" in log_events(proj)


def test_b14_loop_json_and_matching_seal(looped: Looped) -> None:
    """Raising the brakes AND writing the new seal into `.state.loop` is a state tamper."""
    proj, _ = looped()
    path = loop_dir(proj) / "loop.json"
    config = json.loads(path.read_text())
    config["brakes"]["max_iterations"] = 10_000
    path.write_text(json.dumps(config))
    state_file = loop_dir(proj) / ".state.loop"
    state = json.loads(state_file.read_text())
    state["config_sha256"] = store.config_sha256(proj, store.require_tracked(proj, "demo"))
    state_file.write_text(json.dumps(state, indent=2) + "\n")
    res = gate(proj)
    assert res.code == 1 and res.json["reason"] == "state_tampered"


def test_b15_loop_approve_needs_a_human(looped: Looped, hook: Hook) -> None:
    proj, _ = looped(brakes={"max_iterations": 1})
    assert gate(proj).json["halt_reason"] == "iterations_exhausted"
    res = run_cli("--approve", "--loop", "demo", "--project", str(proj.root))
    assert res.code == 1 and "human sign-off" in res.err
    denied(hook(bash(proj.root, "automaton --approve --loop demo")))
    assert store.read_state(proj, "demo").status == "halted"


def test_b16_deleted_state_loop_never_restarts_fresh(looped: Looped) -> None:
    """Deleting `.state.loop` (its log kept) is tampering, not an untracked loop: the tick refuses,
    the gate halts and rebuilds the state from the log's counters, a human approves it back."""
    proj, _ = looped()
    before = store.read_state(proj, "demo")
    (loop_dir(proj) / ".state.loop").unlink()
    assert "TAMPERED" in audit_flags(proj.root) and "state deleted" in audit_flags(proj.root)
    res = run_cli("--mode", "tick", "--loop", "demo", "--project", str(proj.root), "--json", entry="automaton-loop")
    assert res.code == 1 and res.json["reason"] == "state_tampered" and "state deleted" in res.json["halt_detail"]
    assert res.json["ran"] is False
    res = gate(proj)
    assert res.code == 1 and res.json["halt_reason"] == "human_intervention"
    s = store.read_state(proj, "demo")  # re-created halted, with the log's counters, never zeroed
    assert s.status == "halted" and s.iteration_count == before.iteration_count == 1
    assert s.spent_usd >= before.spent_usd
    assert run_cli("--create-loop", "demo", "--from-template", "ci-triage", "--project", str(proj.root)).code == 2


def test_b17_careful_forger_without_the_key_is_detected(looped: Looped, hook: Hook) -> None:
    """Every line carries a mac under the user's key (outside every project, hidden from the
    agent): a forger who recomputes every SHA-256 still writes lines that do not verify, so the
    gate halts with the counters intact. The hook also denies the write itself."""
    import os

    proj, _ = looped()
    folder = loop_dir(proj)
    log = folder / ".state.log"
    before = store.read_state(proj, "demo")
    state = patched(before, iteration_count=0)
    data = store.encode_state(state)
    text = log.read_text()
    last = text.splitlines()[-1]
    forged = format_line("2026-01-01T00:00:00Z", "TICK", {"n": 0}, store.state_token(data), line_hash(last))
    guessed = format_line("2026-01-01T00:00:00Z", "TICK", {"n": 0}, store.state_token(data), line_hash(last),
                          os.urandom(32))
    for command in (f"printf '%s\\n' '{forged}' >> {log}", f"cp /tmp/forged {folder / '.state.loop'}",
                    f"cp -r /tmp/old-loop/. {folder}/"):
        denied(hook(bash(proj.root, command)))
    denied(hook(write(proj.root, log)), ".automaton/")
    for line, why in ((forged, "no mac"), (guessed, "does not verify")):  # written behind the hook's back
        log.write_text(text + line + "\n")
        (folder / ".state.loop").write_bytes(data)
        with pytest.raises(store.StateTampered, match=why):
            store.read_state(proj, "demo")
    res = gate(proj)
    assert res.code == 1 and res.json["reason"] == "state_tampered"
    assert store.read_state(proj, "demo").iteration_count == before.iteration_count  # never lowered


def test_b17_a_whole_log_rewritten_without_the_key_is_refused(looped: Looped) -> None:
    """The forger recomputes the whole chain from line 1 as unkeyed lines, which alone would read
    as a log from before keys existed: automaton marked this log as keyed (in the key's folder),
    so it is a replacement, refused like any tamper."""
    proj, _ = looped()
    folder = loop_dir(proj)
    log = folder / ".state.log"
    state = patched(store.read_state(proj, "demo"), iteration_count=0)
    data = store.encode_state(state)
    prev, lines = "0" * 64, []
    for n, event in enumerate(("CREATED", "TICK")):
        token = store.state_token(data) if n else "sha256:" + "0" * 64
        lines.append(format_line("2026-01-01T00:00:00Z", event, {"loop": "demo"}, token, prev))
        prev = line_hash(lines[-1])
    log.write_text("".join(f"{line}\n" for line in lines))
    (folder / ".state.loop").write_bytes(data)
    with pytest.raises(store.StateTampered, match="the whole log was replaced"):
        store.read_state(proj, "demo")
    assert "replaced" in audit_flags(proj.root)


# ---- B18: names that try to become paths -------------------------------------------------------

@pytest.mark.parametrize("args", [
    ("--create-loop", "../../escape", "--from-template", "ci-triage"),
    ("--create-loop", "demo; rm -rf ~", "--from-template", "ci-triage"),
    ("--create-loop", "ok-name", "--from-template", "../../../etc"),
    ("--check-gate", "demo/../../x"),
    ("--check-gate", "$(id)"),
    ("--create-task", "../outside"),
    ("--create-task", "Tasks"),
    ("--phase", "--task", "demo/../../x"),
    ("--can-edit", "--file", "src/a.py", "--task", "../../etc"),
])
def test_b18_names_are_validated(project: Path, args: tuple[str, ...]) -> None:
    res = cli(project, *args)
    assert res.code == 2 and "Traceback" not in res.err
    assert not (project.parent / "escape").exists() and not (project.parent / "outside").exists()


@pytest.mark.parametrize("field, value, needle", [
    ("name", "../../escape", "name"),
    ("task", "../../etc", "task"),
    ("roles", {"implement": {"prompt": "../../../../etc/passwd"}, "verify": {"command": ["true"], "score": "summary"},
               "orchestrate": {"builtin": True}}, "prompt"),
    ("roles", {"implement": {"prompt": "/etc/passwd"}, "verify": {"command": ["true"], "score": "summary"},
               "orchestrate": {"builtin": True}}, "prompt"),
])
def test_b18_prompt_injected_loop_json(looped: Looped, field: str, value: object, needle: str) -> None:
    """A loop.json rewritten with a path-shaped name, task or prompt file: the seal halts the
    loop first; and even a human approving it cannot make automaton use the bad value."""
    proj, _ = looped()
    path = loop_dir(proj) / "loop.json"
    config = json.loads(path.read_text())
    config[field] = value
    path.write_text(json.dumps(config))
    res = gate(proj)  # an invalid loop.json: exit 2, the halt names the file and the key
    assert res.code == 2 and res.json["halt_detail"].startswith(f"config_changed: {path}: ")
    assert needle in res.json["halt_detail"] and needle in res.json["error"]
    res = run_cli("--approve", "--loop", "demo", "--project", str(proj.root), tty=True)
    assert res.code == 2 and needle in res.err and "Traceback" not in res.err
    assert store.read_state(proj, "demo").status == "halted"


def test_b18_foreign_loop_folder_names_are_ignored(looped: Looped) -> None:
    proj, _ = looped()
    shutil.copytree(loop_dir(proj), proj.loops_dir / "Evil Name", ignore=shutil.ignore_patterns("worktree"))
    res = run_cli("--loop-list", "--project", str(proj.root), "--json")
    assert [row["name"] for row in res.json["loops"]] == ["demo"]


def test_b19_automaton_task_env_to_unknown_task_fails_closed(make_task: Callable[..., Path], project: Path,
                                                               hook: Hook, monkeypatch: pytest.MonkeyPatch) -> None:
    make_task("demo", "research")
    for value in ("nope", "../demo", "demo/../../x"):
        monkeypatch.setenv("AUTOMATON_TASK", value)
        denied(hook(write(project, project / "src/app.py")))
