"""The human acts from the page: approve a halt (bound to what was shown), pause/resume, sign off
a task; each logged `by=<OS user> via=dashboard`, each refused without a session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from automaton.commands.loop_gate import check_gate
from automaton.core.chain import verify_text
from automaton.store.key import load_key
from automaton.store.layout import Project
from tests.commands.loopkit import loop_with, tick
from tests.dashboard.kit import USER, client, halted, hidden, last_line, login, site, state
from tests.helpers import init_repo, run_cli, via_json


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "proj")


def test_approving_clears_the_halt_and_logs_who_and_via(root: Path) -> None:
    p = halted(root)
    s = site(p)
    c = client(s)
    login(s, c)
    loop_page = c.get("/p/0/loop/demo").text
    assert 'id="approve-link"' in loop_page and 'href="/p/0/loop/demo/approve"' in loop_page
    page = c.get("/p/0/loop/demo/approve").text
    assert '<span id="halt-reason">iterations_exhausted</span>' in page
    assert "4 of 4 iterations used" in page and 'id="review-diff"' not in page  # nothing new to seal
    got = c.post("/p/0/loop/demo/approve", data=hidden(page, "approve-form"))
    assert got.status_code == 303 and got.headers["location"] == "/p/0/loop/demo"
    after = c.get("/p/0/loop/demo").text
    assert '<span id="loop-status" class="status status-running">running</span>' in after
    assert 'id="approve-link"' not in after
    st = state(p)
    assert (st.status, st.halt_reason, st.resumed_count) == ("running", None, 1)
    line = last_line(p)
    assert " APPROVED " in line and f"by={USER}" in line and "via=dashboard" in line
    assert verify_text((root / ".automaton/loops/demo/.state.log").read_text(), load_key(create=False)).ok
    history = after.split('id="halts"', 1)[1]
    assert "APPROVED" in history and "dashboard" in history


def test_the_audit_and_the_cli_read_a_log_with_via_lines(root: Path) -> None:
    p = halted(root)
    s = site(p)
    c = client(s)
    login(s, c)
    c.post("/p/0/loop/demo/approve", data=hidden(c.get("/p/0/loop/demo/approve").text, "approve-form"))
    c.post("/p/0/loop/demo/pause", data={"csrf": hidden(c.get("/p/0/loop/demo").text, "pause-form")["csrf"]})
    audit = run_cli("--audit", "--project", str(root), "--json")
    assert audit.json["loops"][0]["flag"] is None, audit.out
    status = run_cli("--loop-status", "demo", "--project", str(root), "--json")
    assert status.code == 0 and status.json["status"] == "paused"


def test_a_config_change_shows_the_diff_and_a_change_after_viewing_is_refused(root: Path) -> None:
    p = loop_with(root, "demo")
    config = root / ".automaton" / "loops" / "demo" / "loop.json"
    data = json.loads(config.read_text())
    data["brakes"]["max_iterations"] = 99
    config.write_text(json.dumps(data, indent=2) + "\n")
    assert check_gate(p, "demo").data["halt_detail"] == "config_changed"  # type: ignore[index]
    s = site(p)
    c = client(s)
    login(s, c)
    page = c.get("/p/0/loop/demo/approve").text
    assert 'id="review-diff"' in page and "max_iterations&#34;: 99" in page and "human_intervention" in page
    fields = hidden(page, "approve-form")
    data["brakes"]["max_iterations"] = 1000  # the agent raises it again between view and click
    config.write_text(json.dumps(data, indent=2) + "\n")
    refused = c.post("/p/0/loop/demo/approve", data=fields)
    assert refused.status_code == 409 and "changed while you reviewed it" in refused.text
    assert state(p).status == "halted"
    page = c.get("/p/0/loop/demo/approve").text
    assert "max_iterations&#34;: 1000" in page
    assert c.post("/p/0/loop/demo/approve", data=hidden(page, "approve-form")).status_code == 303
    st = state(p)
    assert st.status == "running" and "resealed=" in last_line(p) and "via=dashboard" in last_line(p)


def test_a_halt_that_changed_after_viewing_is_refused(root: Path) -> None:
    p = halted(root)
    s = site(p)
    c = client(s)
    login(s, c)
    fields = hidden(c.get("/p/0/loop/demo/approve").text, "approve-form")
    from automaton.store import loops

    loops.update_state(p, "demo", via_json("HALT", {"reason": "drift_detected", "detail": "other"},
                       lambda st: st.update(halt_reason="drift_detected", halt_detail="other")))
    got = c.post("/p/0/loop/demo/approve", data=fields)
    assert got.status_code == 409 and state(p).halt_reason == "drift_detected"


def test_pause_and_resume(root: Path) -> None:
    p = loop_with(root, "demo")
    s = site(p)
    c = client(s)
    login(s, c)
    page = c.get("/p/0/loop/demo").text
    assert '<button type="submit" id="pause">' in page and 'id="resume" disabled' in page
    assert c.post("/p/0/loop/demo/pause", data=hidden(page, "pause-form")).status_code == 303
    assert state(p).status == "paused"
    assert " PAUSED " in last_line(p) and f"by={USER}" in last_line(p) and "via=dashboard" in last_line(p)
    page = c.get("/p/0/loop/demo").text
    assert 'id="pause" disabled' in page and '<button type="submit" id="resume">' in page
    assert c.post("/p/0/loop/demo/resume", data=hidden(page, "resume-form")).status_code == 303
    assert state(p).status == "running" and " RESUMED " in last_line(p) and "via=dashboard" in last_line(p)
    again = c.post("/p/0/loop/demo/resume", data=hidden(page, "resume-form"))
    assert again.status_code == 303 and state(p).status == "running"  # already running: said, not refused


def test_resume_never_clears_a_halt(root: Path) -> None:
    p = halted(root)
    s = site(p)
    c = client(s)
    login(s, c)
    got = c.post("/p/0/loop/demo/resume", data=hidden(c.get("/p/0/loop/demo").text, "resume-form"))
    assert got.status_code == 409 and "use --approve --loop to clear halt" in got.text
    assert state(p).status == "halted"


def _awaiting(root: Path, task: str = "fix-login") -> Path:
    for args in (("--create-task", task), ("--transition", "research", "--task", task)):
        assert run_cli(*args, "--project", str(root)).code == 0
    (root / "tasks" / task / "SPEC.md").write_text("# Spec\n")
    assert run_cli("--transition", "research:awaiting_approval", "--task", task, "--project", str(root)).code == 0
    return root / "tasks" / task


def test_a_task_sign_off_shows_the_artifact_and_binds_to_it(root: Path) -> None:
    folder = _awaiting(root)
    s = site(Project(root.resolve()))
    c = client(s)
    login(s, c)
    board = c.get("/tasks").text
    assert 'data-phase="research:awaiting_approval"' in board and 'data-task="fix-login"' in board
    import hashlib

    digest = hashlib.sha256(b"# Spec\n").hexdigest()
    assert "SPEC.md" in board and digest in board and 'class="approve-task"' in board
    fields = hidden(board, "signoff-fix-login")
    assert fields["sha256"] == digest and fields["phase"] == "research:awaiting_approval"
    (folder / "SPEC.md").write_text("# Spec, changed after the human looked\n")
    refused = c.post("/p/0/task/fix-login/approve", data=fields)
    assert refused.status_code == 409 and "changed while you reviewed it" in refused.text
    assert (folder / ".state").read_text() == "research:awaiting_approval\n"
    fields = hidden(c.get("/tasks").text, "signoff-fix-login")
    assert c.post("/p/0/task/fix-login/approve", data=fields).status_code == 303
    assert (folder / ".state").read_text() == "research:approved\n"
    line = (folder / ".state.log").read_text().splitlines()[-1]
    assert " APPROVED " in line and f"by={USER}" in line and "via=dashboard" in line
    assert 'class="approve-task"' not in c.get("/tasks").text


def test_without_a_session_the_pages_only_show(root: Path) -> None:
    p = halted(root)
    _awaiting(root)
    s = site(p)
    c = client(s)
    loop_page = c.get("/p/0/loop/demo").text
    assert 'data-session="no"' in loop_page and 'id="read-only"' in loop_page
    assert 'id="approve-link"' not in loop_page and 'id="pause"' not in loop_page
    page = c.get("/p/0/loop/demo/approve").text
    assert 'id="read-only"' in page and 'id="approve-form"' not in page and "iterations_exhausted" in page
    assert 'class="approve-task"' not in c.get("/tasks").text
    before = (root / ".automaton/loops/demo/.state.loop").read_bytes()
    for url in ("/p/0/loop/demo/approve", "/p/0/loop/demo/pause", "/p/0/task/fix-login/approve"):
        assert c.post(url, data={"csrf": "x", "seen": "y"}).status_code == 403, url
    assert (root / ".automaton/loops/demo/.state.loop").read_bytes() == before
    assert (root / "tasks/fix-login/.state").read_text() == "research:awaiting_approval\n"


def test_a_read_only_dashboard_refuses_every_act(root: Path) -> None:
    p = loop_with(root, "demo")
    c = client(site(p, human=False))
    assert c.post("/p/0/loop/demo/pause", data={"csrf": "x"}).status_code == 403
    assert state(p).status == "running"


def test_a_first_approval_shows_the_whole_loop_json(root: Path) -> None:
    # A loop from a project template waits for its first approval: the page shows every line of
    # its loop.json (there is no diff: the sealed copy is the same file), and approving it runs it.
    from automaton.commands.loops import create_loop

    tdir = root / ".automaton" / "templates" / "loops" / "mine"
    tdir.mkdir(parents=True)
    template = json.loads((Path(__file__).resolve().parents[2] / "src" / "automaton" / "resources" / "templates"
                           / "loops" / "ci-triage" / "loop.json").read_text())
    template["notify"] = {"webhook": "https://hooks.example/x"}
    (tdir / "loop.json").write_text(json.dumps(template))
    (tdir / "implement.md").write_text("work\n")
    p = Project(root.resolve())
    create_loop(p, "demo", "mine")
    assert state(p).halt_detail.startswith("first_approval: ")
    s = site(p)
    c = client(s)
    login(s, c)
    page = c.get("/p/0/loop/demo/approve").text
    assert 'id="review-whole"' in page and 'id="review-diff"' not in page
    assert "hooks.example/x" in page and "max_iterations&#34;: 25" in page
    done = c.post("/p/0/loop/demo/approve", data=hidden(page, "approve-form"))
    assert done.status_code in (200, 303), done.text
    assert (state(p).status, state(p).resumed_count) == ("running", 0)


def test_a_complete_loop_is_rearmed_from_the_page_and_logged_via_the_dashboard(root: Path) -> None:
    p = loop_with(root, "demo")
    tick(p, 0.5, {"implement": 0.5})
    tick(p, 1.0, {"implement": 0.25}, complete=True)
    s = site(p)
    c = client(s)
    login(s, c)
    page = c.get("/p/0/loop/demo").text
    assert 'id="rearm-form"' in page
    got = c.post("/p/0/loop/demo/rearm", data=hidden(page, "rearm-form"))
    assert got.status_code == 303, got.text
    assert state(p).status == "running"
    line = last_line(p)
    assert " REARMED " in line and f"by={USER}" in line and "via=dashboard" in line
    assert 'id="rearm-form"' not in c.get("/p/0/loop/demo").text
    refused = c.post("/p/0/loop/demo/rearm", data=hidden(page, "rearm-form"))
    assert refused.status_code == 409 and "only re-arms a complete loop" in refused.text
