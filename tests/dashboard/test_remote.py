"""`--dashboard --state-remote REMOTE` (dashboard/remote.py): the remote's loops listed, verified
with the record key before they are shown, acted on through `remote_state.remote_act`, re-read
at most once per REFRESH_S, and a remote that cannot be reached (exit 2 at start, a banner
later). The remote is a local bare repository; one clone publishes two loops, another serves
the dashboard."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from automaton.commands import remote_state
from automaton.core.chain import format_line, line_hash, parse_line
from automaton.core.errors import BadInput
from automaton.dashboard import remote, server
from automaton.store.layout import Project
from automaton.store.locks import locked
from tests.commands.loopkit import loop_with, tick
from tests.dashboard.kit import USER, Browser, Clock, client, halted, hidden, login, site
from tests.helpers import git, init_repo, run_cli


@dataclass
class Pair:
    bare: Path
    seed: Path
    other: Path
    view: remote.RemoteView
    clock: Clock
    browser: Browser


def _publish(seed: Path, name: str) -> None:
    """Put the seed's loop `name` on the remote as its first state commit (what the first
    `--state-remote` tick does)."""
    synced = remote_state.sync_in(Project(seed), name, "origin")
    assert synced.fetched.state is None
    got = remote_state.publish(synced, f"publish {name}", with_branch=False)
    assert got.landed, got.detail


def _ref_state(bare: Path, name: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(git(bare, "show", f"refs/automaton/loops/{name}:.state.loop"))
    return loaded


def _ref(bare: Path, name: str) -> str:
    return git(bare, "rev-parse", f"refs/automaton/loops/{name}").strip()


def _row(page: str, name: str) -> str:
    found = re.search(rf'<tr class="loop" data-project="1" data-loop="{name}"[^>]*>.*?</tr>', page, re.S)
    assert found is not None, page
    return found.group(0)


@pytest.fixture
def pair(tmp_path: Path, approver: str) -> Iterator[Pair]:
    seed = init_repo(tmp_path / "seed")
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    git(seed, "remote", "add", "origin", str(bare))
    halted(seed, "alpha")  # halted by its iteration brake after four ticks
    beta = loop_with(seed, "beta")
    tick(beta, 0.5, {"implement": 0.25, "verify": 0.0}, name="beta")
    _publish(seed, "alpha")
    _publish(seed, "beta")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))
    (other / ".automaton").mkdir()
    clock = Clock()
    view = remote.open_view(Project(other), "origin", clock=clock)
    s = site(Project(other), clock=clock)
    assert view.project is not None
    s.remotes[1] = view
    s.projects.append(view.project)
    c = client(s)
    login(s, c)
    yield Pair(bare, seed, other, view, clock, c)
    view.close()


def test_the_list_shows_both_loops_of_the_remote_and_their_state(pair: Pair) -> None:
    page = pair.browser.get("/")
    assert page.status_code == 200, page.text
    alpha, beta = _row(page.text, "alpha"), _row(page.text, "beta")
    assert 'data-status="halted"' in alpha and "iterations_exhausted" in alpha and "4 / 4" in alpha
    assert 'data-status="running"' in beta and "1 / " in beta
    assert "origin (state remote)" in alpha
    loop = pair.browser.get("/p/1/loop/alpha")
    assert loop.status_code == 200 and 'class="status status-halted">halted<' in loop.text
    # The fetched states live in the view's private folder, never in the checkout's loop folders.
    assert not (pair.other / ".automaton" / "loops").exists()
    assert str(pair.view.base).startswith(str(Path.home()))
    assert pair.browser.get("/tasks").status_code == 200


def test_an_approval_of_a_halted_remote_loop_lands_on_the_remote(pair: Pair) -> None:
    page = pair.browser.get("/p/1/loop/alpha/approve")
    assert page.status_code == 200 and 'id="approve-form"' in page.text, page.text
    got = pair.browser.post("/p/1/loop/alpha/approve", data=hidden(page.text, "approve-form"))
    assert got.status_code == 200, got.text
    assert "state of loop alpha pushed to origin" in got.text
    state = _ref_state(pair.bare, "alpha")
    assert (state["status"], state["halt_reason"], state["resumed_count"]) == ("running", None, 1)
    log = git(pair.bare, "show", "refs/automaton/loops/alpha:.state.log").splitlines()
    assert " APPROVED " in log[-1] and f"by={USER}" in log[-1] and "via=dashboard" in log[-1]
    after = pair.browser.get("/")  # the act made the view stale: the list reads the remote again
    assert 'data-status="running"' in _row(after.text, "alpha")


def test_an_approval_bound_to_a_state_the_remote_no_longer_holds_is_refused(pair: Pair) -> None:
    page = pair.browser.get("/p/1/loop/alpha/approve").text
    ran = run_cli("--approve", "--loop", "alpha", "--yes", "--state-remote", "origin", "--project", str(pair.seed))
    assert ran.code == 0, ran.out + ran.err
    paused = run_cli("--pause-loop", "alpha", "--state-remote", "origin", "--project", str(pair.seed))
    assert paused.code == 0, paused.err
    before = _ref(pair.bare, "alpha")
    got = pair.browser.post("/p/1/loop/alpha/approve", data=hidden(page, "approve-form"))
    assert got.status_code == 409, got.text
    assert _ref(pair.bare, "alpha") == before


def test_pause_and_resume_land_on_the_remote(pair: Pair) -> None:
    csrf = hidden(pair.browser.get("/p/1/loop/beta").text, "pause-form")["csrf"]
    got = pair.browser.post("/p/1/loop/beta/pause", data={"csrf": csrf})
    assert got.status_code == 200 and "pushed to origin" in got.text, got.text
    assert _ref_state(pair.bare, "beta")["status"] == "paused"
    got = pair.browser.post("/p/1/loop/beta/resume", data={"csrf": csrf})
    assert got.status_code == 200, got.text
    assert _ref_state(pair.bare, "beta")["status"] == "running"


def test_an_act_without_a_session_changes_nothing_on_the_remote(pair: Pair) -> None:
    s = site(Project(pair.other), clock=pair.clock)
    assert pair.view.project is not None
    s.remotes[1] = pair.view
    s.projects.append(pair.view.project)
    before = _ref(pair.bare, "beta")
    got = client(s).post("/p/1/loop/beta/pause", data={"csrf": "x"})
    assert got.status_code == 403
    assert _ref(pair.bare, "beta") == before


def _cheaper(text: str) -> str:
    forged = re.sub(r"spent_usd=[0-9.]+", "spent_usd=0.0", text)
    assert forged != text
    return forged


def _unkeyed(text: str) -> str:
    """The same log as a sound chain of unkeyed lines, which anyone can write without the key."""
    parsed = [parse_line(raw) for raw in text.splitlines()]
    out, prev = [], parsed[0].prev if parsed[0] is not None else ""
    for line in parsed:
        assert line is not None
        raw = format_line(line.ts, line.event, dict(line.fields), line.state, prev)
        out.append(raw)
        prev = line_hash(raw)
    return "\n".join(out) + "\n"


def _forge(tmp_path: Path, bare: Path, name: str, rewrite: Callable[[str], str] = _cheaper) -> None:
    """Someone with push rights rewrites a loop's log (default: a cheaper spend) and force-pushes it."""
    work = tmp_path / "forger"
    git(tmp_path, "clone", "-q", str(bare), str(work))
    git(work, "fetch", "-q", "origin", f"refs/automaton/loops/{name}:refs/forge")
    git(work, "checkout", "-q", "refs/forge")
    log = work / ".state.log"
    log.write_text(rewrite(log.read_text()))
    git(work, "commit", "-qam", "forged")
    git(work, "push", "-q", "--force", "origin", f"HEAD:refs/automaton/loops/{name}")


def test_a_forged_state_ref_shows_as_tampered_and_its_act_is_refused(pair: Pair, tmp_path: Path) -> None:
    _forge(tmp_path, pair.bare, "beta")
    pair.clock.now += remote.REFRESH_S
    page = pair.browser.get("/").text
    row = _row(page, "beta")
    assert 'data-status="tampered"' in row and "does not verify" in row and "state_tampered" in row
    assert 'data-status="halted"' in _row(page, "alpha")  # the other loop is still shown
    assert pair.view.project is not None and not pair.view.project.loop_dir("beta").exists()  # never written
    assert pair.browser.get("/p/1/loop/beta").status_code == 409
    before = _ref(pair.bare, "beta")
    csrf = hidden(pair.browser.get("/p/1/loop/alpha").text, "pause-form")["csrf"]
    got = pair.browser.post("/p/1/loop/beta/pause", data={"csrf": csrf})
    assert got.status_code == 409 and "does not verify" in got.text, got.text
    assert _ref(pair.bare, "beta") == before
    assert not (pair.other / ".automaton" / "loops" / "beta").exists()  # nothing was fetched into the checkout


def test_a_state_whose_log_is_a_sound_but_unkeyed_chain_is_tampered(pair: Pair, tmp_path: Path) -> None:
    _forge(tmp_path, pair.bare, "alpha", _unkeyed)
    pair.clock.now += remote.REFRESH_S
    row = _row(pair.browser.get("/").text, "alpha")
    # the state commit's keyed manifest refuses it first (commands/remote_manifest.py)
    assert 'data-status="tampered"' in row and "does not verify with the record key" in row, row
    assert pair.browser.get("/p/1/loop/alpha/approve").status_code == 409


def test_a_ref_that_is_not_a_loop_state_is_tampered(pair: Pair, tmp_path: Path) -> None:
    tree = git(pair.other, "hash-object", "-w", "-t", "tree", "/dev/null").strip()  # the empty tree
    commit = git(pair.other, "commit-tree", tree, "-m", "not a state").strip()
    git(pair.other, "push", "-q", str(pair.bare), f"{commit}:refs/automaton/loops/gamma")
    pair.clock.now += remote.REFRESH_S
    row = _row(pair.browser.get("/").text, "gamma")
    assert 'data-status="tampered"' in row and "is not a loop&#39;s state" in row, row


def test_the_remote_is_read_again_at_most_once_per_refresh_interval(pair: Pair) -> None:
    paused = run_cli("--pause-loop", "beta", "--state-remote", "origin", "--project", str(pair.seed))
    assert paused.code == 0, paused.err
    pair.clock.now += remote.REFRESH_S - 1
    assert 'data-status="running"' in _row(pair.browser.get("/fragment/loops").text, "beta")  # not yet
    pair.clock.now += 1
    assert 'data-status="paused"' in _row(pair.browser.get("/fragment/loops").text, "beta")


def test_a_refresh_that_cannot_reach_the_remote_is_a_banner_over_the_last_states(pair: Pair, tmp_path: Path) -> None:
    shutil.move(pair.bare, tmp_path / "moved.git")
    pair.clock.now += remote.REFRESH_S
    got = pair.browser.get("/fragment/loops")
    assert got.status_code == 200, got.text
    assert '<tr class="banner">' in got.text and "refresh failed" in got.text
    assert "cannot read the state remote" in got.text
    assert 'data-status="halted"' in _row(got.text, "alpha")
    shutil.move(tmp_path / "moved.git", pair.bare)
    pair.clock.now += remote.REFRESH_S
    assert '<tr class="banner">' not in pair.browser.get("/fragment/loops").text


def test_an_act_is_refused_while_a_tick_of_the_loop_runs_in_this_checkout(pair: Pair) -> None:
    folder = pair.other / ".automaton" / "loops" / "beta"
    folder.mkdir(parents=True)
    csrf = hidden(pair.browser.get("/p/1/loop/beta").text, "pause-form")["csrf"]
    before = _ref(pair.bare, "beta")
    with locked(folder / ".lock", timeout_s=0):
        got = pair.browser.post("/p/1/loop/beta/pause", data={"csrf": csrf})
    assert got.status_code == 409 and "runs in this checkout" in got.text, got.text
    assert _ref(pair.bare, "beta") == before


def test_start_with_a_remote_serves_its_loops_as_one_more_project(pair: Pair) -> None:
    started = server.prepare([str(pair.other)], "127.0.0.1", 0, terminal=True, state_remote="origin")
    try:
        assert started.site.remotes[1].remote == "origin" and len(started.site.projects) == 2
        assert any("state remote 'origin': 2 loop(s), 0 of them not verified" in line for line in started.lines)
        base = started.site.remotes[1].base
        assert base.is_dir()
    finally:
        started.close()
    assert not base.exists()


@pytest.mark.parametrize(("given", "says"), [("nope", "cannot read the state remote 'nope'"),
                                              ("-oops", "not a git remote name or URL")])
def test_start_with_a_remote_that_cannot_be_read_is_one_line_and_exit_2(pair: Pair, given: str, says: str) -> None:
    with pytest.raises(BadInput, match=re.escape(says)):
        server.prepare([str(pair.other)], "127.0.0.1", 0, state_remote=given)
    ran = run_cli("--dashboard", f"--state-remote={given}", "--project", str(pair.other), "--port", "0")
    assert ran.code == 2 and says in ran.err and "Traceback" not in ran.err, ran.err
    assert len(ran.err.strip().splitlines()) == 1


def test_start_with_a_remote_and_two_projects_is_refused(pair: Pair, tmp_path: Path) -> None:
    more = init_repo(tmp_path / "more")
    (more / ".automaton").mkdir()
    with pytest.raises(BadInput, match="pass one --project"):
        server.prepare([str(pair.other), str(more)], "127.0.0.1", 0, state_remote="origin")


def test_a_complete_remote_loop_is_rearmed_on_the_remote(pair: Pair) -> None:
    gamma = loop_with(pair.seed, "gamma")
    tick(gamma, 0.5, {"implement": 0.5}, name="gamma")
    tick(gamma, 1.0, {"implement": 0.25}, name="gamma", complete=True)
    _publish(pair.seed, "gamma")
    pair.clock.now += remote.REFRESH_S
    page = pair.browser.get("/p/1/loop/gamma")
    assert page.status_code == 200 and 'id="rearm-form"' in page.text, page.text
    got = pair.browser.post("/p/1/loop/gamma/rearm", data=hidden(page.text, "rearm-form"))
    assert got.status_code == 200 and "pushed to origin" in got.text, got.text
    assert _ref_state(pair.bare, "gamma")["status"] == "running"
    log = git(pair.bare, "show", "refs/automaton/loops/gamma:.state.log").splitlines()
    assert " REARMED " in log[-1] and "via=dashboard" in log[-1]
