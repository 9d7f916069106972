"""A loop's state in a git remote (commands/remote_state.py, git/remote.py): human acts from
another clone, a fetched state that must verify with the key, a flag against the sealed field,
and the compare-and-swap push against a real bare repository."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from automaton.git import remote as git_remote
from tests.helpers import git, run_cli
from tests.runner import fleetkit as fk


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> fk.Fleet:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    made = fk.make_fleet(tmp_path, 2)
    first = _tick(made.seed, Path(os.environ["HOME"]))
    assert first.returncode == 0 and '"ran": true' in first.stdout, first.stderr
    return made


def _tick(clone: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(fk.runner_argv(clone), env=fk.runner_env(home), capture_output=True, text=True,
                          timeout=300, check=False)


def _remote_state(fleet: fk.Fleet) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(git(fleet.bare, "show", f"refs/automaton/loops/{fk.LOOP}:.state.loop"))
    return loaded


def test_a_pause_from_another_clone_stops_the_next_runner_and_a_resume_lets_it_run(fleet: fk.Fleet) -> None:
    third = fleet.clones[1]
    paused = run_cli("--pause-loop", fk.LOOP, "--state-remote", "origin", "--project", str(third))
    assert paused.code == 0, paused.err
    assert _remote_state(fleet)["status"] == "paused"
    stopped = _tick(fleet.clones[0], fleet.homes[0])
    assert stopped.returncode == 1 and '"ran": false' in stopped.stdout, stopped.stderr
    resumed = run_cli("--resume-loop", fk.LOOP, "--state-remote", "origin", "--project", str(third))
    assert resumed.code == 0, resumed.err
    again = _tick(fleet.clones[0], fleet.homes[0])
    assert again.returncode == 0 and '"ran": true' in again.stdout, again.stderr
    assert _remote_state(fleet)["iteration_count"] == 2


def test_an_approval_from_another_clone_clears_a_halt_the_next_runner_sees(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 2, max_iterations=2)
    for clone, home in ((fleet.seed, Path(os.environ["HOME"])), (fleet.clones[0], fleet.homes[0])):
        assert '"ran": true' in _tick(clone, home).stdout
    halted = _tick(fleet.clones[0], fleet.homes[0])  # the runner's gate halts the loop and pushes the halt
    assert halted.returncode == 1 and '"ran": false' in halted.stdout, halted.stderr
    state = _remote_state(fleet)
    assert state["status"] == "halted" and state["halt_reason"] == "iterations_exhausted"
    approved = run_cli("--approve", "--loop", fk.LOOP, "--yes", "--state-remote", "origin",
                       "--project", str(fleet.clones[1]))
    assert approved.code == 0, approved.out + approved.err
    assert _remote_state(fleet)["status"] == "running"
    again = _tick(fleet.clones[0], fleet.homes[0])
    assert again.returncode == 0 and '"ran": true' in again.stdout, again.stderr
    assert _remote_state(fleet)["iteration_count"] == 3


def test_a_state_remote_flag_that_disagrees_with_the_sealed_field_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    fleet = fk.make_fleet(tmp_path, 1, state_remote="origin")
    plain = [a for a in fk.runner_argv(fleet.seed) if a not in ("--state-remote", "origin")]
    first = subprocess.run(plain, env=fk.runner_env(Path(os.environ["HOME"])), capture_output=True, text=True,
                           check=False)  # no flag: the sealed field sends the tick through the remote
    assert first.returncode == 0 and '"ran": true' in first.stdout, first.stderr
    assert _remote_state(fleet)["iteration_count"] == 1
    other = [*fk.runner_argv(fleet.clones[0])[:-4], "--state-remote", str(fleet.bare), "--quiet", "--json"]
    refused = subprocess.run(other, env=fk.runner_env(fleet.homes[0]), capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and "disagrees with loop.json state_remote" in refused.stderr, refused.stderr
    assert _remote_state(fleet)["iteration_count"] == 1
    bad = subprocess.run([*other[:-4], "--state-remote", "-oops", "--quiet", "--json"],
                         env=fk.runner_env(fleet.homes[0]), capture_output=True, text=True, check=False)
    assert bad.returncode == 2


def test_a_fetched_state_that_does_not_verify_with_the_key_runs_nothing(fleet: fk.Fleet, tmp_path: Path) -> None:
    # Someone with push rights rewrites the log (a cheaper spend): the key catches it.
    work = tmp_path / "forger"
    git(tmp_path, "clone", "-q", str(fleet.bare), str(work))
    git(work, "fetch", "-q", "origin", f"refs/automaton/loops/{fk.LOOP}:refs/forge")
    git(work, "checkout", "-q", "refs/forge")
    log = work / ".state.log"
    log.write_text(log.read_text().replace("spent_usd=1.0", "spent_usd=0.0"))
    git(work, "commit", "-qam", "forged")
    git(work, "push", "-q", "--force", "origin", f"HEAD:refs/automaton/loops/{fk.LOOP}")
    out = _tick(fleet.clones[0], fleet.homes[0])
    assert out.returncode == 2, out.stdout + out.stderr
    assert "does not verify with the record key" in out.stderr
    assert not (fleet.clones[0] / ".automaton" / "loops" / fk.LOOP / "runs" / "2").exists()


def test_a_push_with_a_stale_lease_is_lost_and_moves_nothing(fleet: fk.Fleet) -> None:
    clone = fleet.clones[0]
    fetched = git_remote.fetch(clone, "origin", fk.LOOP)
    assert fetched.state is not None and fetched.branch is not None
    first = git_remote.write_commit(clone, {"a.txt": b"one\n"}, fetched.state, "one")
    second = git_remote.write_commit(clone, {"a.txt": b"two\n"}, fetched.state, "two")
    ref = git_remote.state_ref(fk.LOOP)
    won = git_remote.push(clone, "origin", [git_remote.Move(ref, first, fetched.state)])
    lost = git_remote.push(clone, "origin", [git_remote.Move(ref, second, fetched.state)])
    assert won.landed and not won.lost
    assert lost.lost and not lost.landed
    assert git(fleet.bare, "rev-parse", ref).strip() == first
    absent = git_remote.push(clone, "origin", [git_remote.Move("refs/automaton/loops/other", first, None)])
    again = git_remote.push(clone, "origin", [git_remote.Move("refs/automaton/loops/other", second, None)])
    assert absent.landed and again.lost
    assert git_remote.read_tree(clone, first) == {"a.txt": b"one\n"}
