"""Task claims through the state remote (commands/remote_claims.py): two machines (fresh
clones, each its own HOME, one record key) racing to claim one task, a tick of the losing loop
stopped `task_claimed`, a bound loop's running tick that refuses a claim, a holder whose
completion or halt lets the task go, a forged claim and an unreachable remote."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from automaton.commands import remote_claims, remote_state
from automaton.core.errors import CorruptState
from automaton.store.layout import Project
from tests.commands.conftest import LostLeases
from tests.helpers import git, init_repo, run_cli, seed_task
from tests.runner import fleetkit as fk
from tests.runner.loopkit import make_loop

TASK = "t"
ONE, TWO = "demo", "other"
ROUNDS = int(os.environ.get("CLAIM_ROUNDS", "3"))
RACE_TASKS = [f"r{n}" for n in range(ROUNDS)]
# `other`'s verifier: every test passes once the loop has made two commits (its second tick
# completes the loop); before that one of two fails.
DONE_AT_TWO = "import pathlib; n = len(pathlib.Path('src/work.txt').read_text().split()); " \
              "print('2 passed' if n >= 2 else '1 passed, 1 failed')"


@dataclass(frozen=True)
class Machines:
    bare: Path
    seed: Path
    clones: list[Path]
    homes: list[Path]


def _loop(seed: Path, name: str, verify: str, max_iterations: int, **over: object) -> None:
    make_loop(seed, name, task=TASK, sandbox="off", **over,
              harness={"name": "command", "command": [fk.PY, "-c", fk.AGENT], "args": [], "timeout_s": 60},
              brakes={"max_iterations": max_iterations, "max_budget_usd": 5000.0, "max_tick_usd": 1.0,
                      "score_plateau_window": 3, "plateau_epsilon": 0.0, "target_score": 1.0},
              roles={"implement": {"prompt": "implement.md"}, "verify": {"command": [fk.PY, "-c", verify],
                                                                          "score": "summary"},
                     "orchestrate": {"builtin": True}})


def _machines(tmp: Path, *, other_verify: str = fk.VERIFY, other_iterations: int = 1000,
              **over: object) -> Machines:
    """The seed checkout holds the tasks (committed, so every clone has them) and makes two
    loops bound to TASK, publishes each with one tick through the remote; then two clones."""
    seed = init_repo(tmp / "seed")
    (seed / "src").mkdir()
    (seed / "src" / "keep.txt").write_text("keep\n")
    for task in (TASK, *RACE_TASKS):
        seed_task(seed, task, "implement")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "src and tasks")
    bare = tmp / "remote.git"
    git(tmp, "clone", "-q", "--bare", str(seed), str(bare))
    git(seed, "remote", "add", "origin", str(bare))
    _loop(seed, ONE, fk.VERIFY, 1000, **over)
    _loop(seed, TWO, other_verify, other_iterations, **over)
    for name in (ONE, TWO):
        first = _tick(seed, Path(os.environ["HOME"]), name)
        assert first.returncode == 0 and '"ran": true' in first.stdout, first.stdout + first.stderr
    clones, homes = fk.machines(tmp, bare, 2)
    return Machines(bare, seed, clones, homes)


@pytest.fixture
def machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> Machines:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    return _machines(tmp_path)


def _tick_argv(clone: Path, loop: str) -> list[str]:
    return [fk.PY, fk.RUNNER, "--mode", "tick", "--loop", loop, "--project", str(clone), "--state-remote", "origin",
            "--quiet", "--json"]


def _tick(clone: Path, home: Path, loop: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_tick_argv(clone, loop), env=fk.runner_env(home, **extra), capture_output=True, text=True,
                          timeout=300, check=False)


def _claim_argv(clone: Path, loop: str, task: str, remote: str = "origin") -> list[str]:
    return [fk.PY, "-m", "automaton", "--claim-loop-task", loop, "--task", task, "--state-remote", remote,
            "--project", str(clone), "--json"]


def _claim(clone: Path, home: Path, loop: str, task: str, remote: str = "origin") -> subprocess.CompletedProcess[str]:
    return subprocess.run(_claim_argv(clone, loop, task, remote), env=fk.runner_env(home, AUTOMATON_APPROVER="tester"),
                          capture_output=True, text=True, timeout=300, check=False)


def _state(m: Machines, loop: str) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(git(m.bare, "show", f"refs/automaton/loops/{loop}:.state.loop"))
    return loaded


def _claim_on_remote(m: Machines, task: str) -> dict[str, object] | None:
    listed = git(m.bare, "for-each-ref", "--format=%(refname)", f"refs/automaton/claims/{task}")
    if not listed.strip():
        return None
    loaded: dict[str, object] = json.loads(git(m.bare, "show", f"refs/automaton/claims/{task}:claim.json"))
    return loaded


def _oid(m: Machines, rev: str) -> str:
    return git(m.bare, "rev-parse", rev).strip()


def test_two_machines_racing_for_one_task_end_with_exactly_one_claim_each_round(machines: Machines) -> None:
    m = machines
    for task in (TASK, *RACE_TASKS):
        before = {name: _oid(m, f"refs/automaton/loops/{name}") for name in (ONE, TWO)}
        env = [fk.runner_env(home, AUTOMATON_APPROVER="tester") for home in m.homes]
        procs = [subprocess.Popen(_claim_argv(m.clones[0], ONE, task), env=env[0], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True),
                 subprocess.Popen(_claim_argv(m.clones[1], TWO, task), env=env[1], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)]
        done = [(p, *p.communicate(timeout=300)) for p in procs]
        codes = sorted(p.returncode for p, _, _ in done)
        assert codes == [0, 1], [(p.returncode, o, e) for p, o, e in done]
        winner = json.loads(next(o for p, o, _ in done if p.returncode == 0))["loop"]
        loser_err = next(e for p, _, e in done if p.returncode == 1)
        assert f"claimed by loop {winner}" in loser_err or "moved the state remote" in loser_err, loser_err
        assert len(loser_err.strip().splitlines()) == 1, loser_err
        on_remote = _claim_on_remote(m, task)
        assert on_remote is not None and on_remote["loop"] == winner and on_remote["task"] == task
        if task == TASK:  # both loops are bound to TASK: the winner's push moved the loser's state ref
            loser = TWO if winner == ONE else ONE
            fenced = _oid(m, f"refs/automaton/loops/{loser}")
            assert fenced != before[loser] and _oid(m, f"{fenced}^") == before[loser]
            assert _oid(m, f"{fenced}^{{tree}}") == _oid(m, f"{before[loser]}^{{tree}}")
            assert _oid(m, f"refs/automaton/loops/{winner}") == before[winner]


def test_a_tick_of_the_other_loop_on_the_other_machine_stops_task_claimed(machines: Machines) -> None:
    m = machines
    won = _claim(m.clones[0], m.homes[0], ONE, TASK)
    assert won.returncode == 0, won.stdout + won.stderr
    assert json.loads(won.stdout)["replaced"] is None
    again = _claim(m.clones[1], m.homes[1], ONE, TASK)  # idempotent, from either machine
    assert again.returncode == 0 and json.loads(again.stdout)["claimed_at"] == json.loads(won.stdout)["claimed_at"]
    before = _state(m, TWO)
    stopped = _tick(m.clones[1], m.homes[1], TWO)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    out = json.loads(stopped.stdout)
    assert out["ran"] is False and out["reason"] == "task_claimed" and f"claimed by loop {ONE}" in out["detail"]
    after = _state(m, TWO)
    assert after["iteration_count"] == before["iteration_count"] and after["spent_usd"] == before["spent_usd"]
    ran = _tick(m.clones[1], m.homes[1], ONE)  # the holder itself ticks on any machine
    assert ran.returncode == 0 and '"ran": true' in ran.stdout, ran.stdout + ran.stderr


def test_a_tick_that_fetched_before_the_claim_loses_its_own_tick_claim(machines: Machines) -> None:
    """The fence: the claim moved the bound loop's state ref, so the push a tick of that loop
    makes on the state it fetched before the claim (its tick claim) loses its lease."""
    m = machines
    synced = remote_state.sync_in(Project(m.clones[1].resolve()), TWO, "origin")
    assert _claim(m.clones[0], m.homes[0], ONE, TASK).returncode == 0
    late = remote_state.publish(synced, "a tick claim on the state fetched before the task claim", with_branch=False)
    assert late.lost and not late.landed


def test_a_claim_that_keeps_losing_its_lease_gives_up_after_the_bound_in_seconds(
        machines: Machines, lost_leases: Callable[[], LostLeases]) -> None:
    lost = lost_leases()
    out = run_cli("--claim-loop-task", ONE, "--task", TASK, "--state-remote", "origin", "--project",
                  str(machines.clones[0]), human=True)
    assert out.code == 1, out.err
    assert re.search(r"moved the state remote 'origin' first, again and again for 1[2-3]\d s; nothing was claimed",
                     out.err), out.err
    assert _claim_on_remote(machines, TASK) is None
    assert lost.pushes > 8 and len(lost.waits) == lost.pushes - 1


def test_a_claim_is_refused_while_a_bound_loops_tick_runs_on_another_machine(machines: Machines) -> None:
    m = machines
    killed = _tick(m.clones[1], m.homes[1], TWO, FLEET_KILL_AT="after_claim")  # its TICK_START is on the remote
    assert killed.returncode != 0
    refused = _claim(m.clones[0], m.homes[0], ONE, TASK)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert f"of loop {TWO}, which is bound to task {TASK}, runs now" in refused.stderr
    assert _claim_on_remote(m, TASK) is None


def test_the_holder_completing_lets_the_task_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    m = _machines(tmp_path, other_verify=DONE_AT_TWO)
    assert _claim(m.clones[1], m.homes[1], TWO, TASK).returncode == 0
    assert _tick(m.clones[0], m.homes[0], ONE).returncode == 1  # task_claimed
    done = _tick(m.clones[1], m.homes[1], TWO)
    assert done.returncode == 0 and '"ran": true' in done.stdout, done.stdout + done.stderr
    assert _state(m, TWO)["status"] == "complete"
    ran = _tick(m.clones[0], m.homes[0], ONE)
    assert ran.returncode == 0 and '"ran": true' in ran.stdout, ran.stdout + ran.stderr
    took = _claim(m.clones[0], m.homes[0], ONE, TASK)
    assert took.returncode == 0, took.stdout + took.stderr
    assert json.loads(took.stdout)["replaced"] == TWO
    assert (_claim_on_remote(m, TASK) or {})["loop"] == ONE


def test_a_halted_holder_lets_the_task_go_and_holds_again_once_approved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    m = _machines(tmp_path, other_iterations=1)  # its publishing tick used its one iteration
    assert _claim(m.clones[1], m.homes[1], TWO, TASK).returncode == 0
    halted = _tick(m.clones[1], m.homes[1], TWO)  # the gate halts it and pushes the halt
    assert halted.returncode == 1 and _state(m, TWO)["status"] == "halted", halted.stdout + halted.stderr
    ran = _tick(m.clones[0], m.homes[0], ONE)
    assert ran.returncode == 0 and '"ran": true' in ran.stdout, ran.stdout + ran.stderr
    env = fk.runner_env(m.homes[1], AUTOMATON_APPROVER="tester")
    approved = subprocess.run([fk.PY, "-m", "automaton", "--approve", "--loop", TWO, "--yes", "--state-remote",
                               "origin", "--project", str(m.clones[1])], env=env, capture_output=True, text=True,
                              timeout=300, check=False)
    assert approved.returncode == 0 and _state(m, TWO)["status"] == "running", approved.stdout + approved.stderr
    stopped = _tick(m.clones[0], m.homes[0], ONE)
    assert stopped.returncode == 1 and '"reason": "task_claimed"' in stopped.stdout, stopped.stdout + stopped.stderr


def test_a_loop_whose_loop_json_names_its_state_remote_claims_there_without_the_flag(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    m = _machines(tmp_path, state_remote="origin")
    home = Path(os.environ["HOME"])
    env = fk.runner_env(home, AUTOMATON_APPROVER="tester")
    plain = [fk.PY, "-m", "automaton", "--claim-loop-task", ONE, "--task", TASK, "--project", str(m.seed), "--json"]
    other = [*plain[:-1], "--state-remote", str(m.bare), "--json"]
    refused = subprocess.run(other, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert refused.returncode == 2 and "disagrees with loop.json state_remote" in refused.stderr, refused.stderr
    assert _claim_on_remote(m, TASK) is None
    done = subprocess.run(plain, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and json.loads(done.stdout)["remote"] == "origin", done.stdout + done.stderr
    assert (_claim_on_remote(m, TASK) or {})["loop"] == ONE
    assert not (m.seed / ".automaton" / "claims").exists()  # the remote's claim, not this checkout's
    stopped = _tick(m.clones[0], m.homes[0], TWO)
    assert stopped.returncode == 1 and '"reason": "task_claimed"' in stopped.stdout, stopped.stdout + stopped.stderr


def _forge(m: Machines, tmp: Path, body: dict[str, object]) -> None:
    """Someone with push rights but not the key writes a claim of TASK by loop `other`."""
    work = tmp / "forger"
    git(tmp, "clone", "-q", str(m.bare), str(work))
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=work, input=json.dumps(body) + "\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    tree = subprocess.run(["git", "mktree"], cwd=work, input=f"100644 blob {blob}\tclaim.json\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    commit = git(work, "commit-tree", tree, "-m", "forged").strip()
    git(work, "push", "-q", "origin", f"{commit}:refs/automaton/claims/{TASK}")


def test_a_forged_claim_is_refused_with_one_line_and_runs_nothing(machines: Machines, tmp_path: Path) -> None:
    m = machines
    _forge(m, tmp_path, {"schema_version": 1, "task": TASK, "loop": TWO, "claimed_at": "2026-12-01T00:00:00Z",
                         "mac": "0" * 64})
    before = _state(m, ONE)
    out = _tick(m.clones[0], m.homes[0], ONE)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "does not verify with the record key" in out.stderr and "Traceback" not in out.stderr
    assert _state(m, ONE)["iteration_count"] == before["iteration_count"]
    claim = _claim(m.clones[0], m.homes[0], ONE, TASK)
    assert claim.returncode == 2 and "does not verify with the record key" in claim.stderr, claim.stderr
    assert len(claim.stderr.strip().splitlines()) == 1 and (_claim_on_remote(m, TASK) or {})["loop"] == TWO


def test_an_unreachable_remote_is_one_line_and_exit_1(machines: Machines, tmp_path: Path) -> None:
    m = machines
    gone = str(tmp_path / "nowhere.git")
    out = _claim(m.clones[0], m.homes[0], ONE, TASK, remote=gone)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "cannot read the state remote" in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert _claim_on_remote(m, TASK) is None


def test_parse_claim_takes_only_a_sealed_claim_of_its_own_task(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    body = remote_claims.claim_body("p/s", "one", "2026-12-01T00:00:00Z")
    got = remote_claims.parse_claim("p/s", body, "c0ffee")
    assert got == remote_claims.RemoteClaim("p/s", "one", "2026-12-01T00:00:00Z", "c0ffee")
    assert remote_claims.claim_ref("p/s") == "refs/automaton/claims/p--s"
    with pytest.raises(CorruptState, match="is not a claim of task q"):
        remote_claims.parse_claim("q", body, "c0ffee")
    renamed = body.replace(b'"loop": "one"', b'"loop": "two"')
    with pytest.raises(CorruptState, match="does not verify with the record key"):
        remote_claims.parse_claim("p/s", renamed, "c0ffee")
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", "6b" * 32)  # another key: not this key's claim
    with pytest.raises(CorruptState, match="does not verify with the record key"):
        remote_claims.parse_claim("p/s", body, "c0ffee")
    with pytest.raises(CorruptState, match="is not a claim"):
        remote_claims.parse_claim("p/s", None, "c0ffee")


def test_a_claim_through_a_state_remote_is_a_human_act(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is fetched for an agent: its shell (a marker variable) is refused first."""
    monkeypatch.setenv("AUTOMATON_APPROVER", "tester")
    monkeypatch.setenv("CLAUDECODE", "1")
    out = run_cli("--claim-loop-task", ONE, "--task", TASK, "--state-remote", "origin", "--project", str(project))
    assert out.code == 1 and "human sign-off" in out.err, out.err


def test_a_claim_through_a_remote_this_checkout_does_not_have_is_bad_input(tmp_path: Path, approver: str) -> None:
    """As every other `--state-remote` command: a plain name that is no remote here is exit 2,
    naming `git remote -v`, never git's advice line."""
    repo = init_repo(tmp_path / "p")
    seed_task(repo, "fixit", "research")
    out = run_cli("--claim-loop-task", "la", "--task", "fixit", "--state-remote", "nosuch", "--project", str(repo))
    assert out.code == 2, out.out + out.err
    assert "this checkout has no such remote" in out.err and "repository exists" not in out.err
