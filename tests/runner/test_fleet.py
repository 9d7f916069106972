"""The state remote under a fleet: runners on fresh clones (each its own HOME: separate
machines) tick one loop whose state lives in a bare repository, started together, killed at
each step of the protocol, and refused by the remote (commands/remote_state.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from automaton.core.names import LoopName
from tests.helpers import alive, git, run_cli
from tests.runner import fleetkit as fk

ROUNDS = int(os.environ.get("FLEET_ROUNDS", "3"))  # bench/bench_fleet.py runs 25
TTL_PAST = str(24 * 3600)  # a clock a day ahead: every open claim has outlived its TTL


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> fk.Fleet:
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    made = fk.make_fleet(tmp_path, 4)
    first = _run(made.seed, Path(os.environ["HOME"]))
    assert first.returncode == 0 and '"ran": true' in first.stdout, first.stderr
    return made


def _run(clone: Path, home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(fk.runner_argv(clone), env=fk.runner_env(home, **extra), capture_output=True, text=True,
                          timeout=300, check=False)


def _together(fleet: fk.Fleet, **extra: str) -> list[tuple[int, str, str]]:
    procs = [fk.start(c, h, **extra) for c, h in zip(fleet.clones, fleet.homes, strict=True)]
    out = []
    for p in procs:
        o, e = p.communicate(timeout=300)
        out.append((p.returncode, o, e))
    return out


def _settle_then_together(fleet: fk.Fleet) -> int:
    """One runner whose clock is a day ahead (it settles an abandoned claim), then all four
    together on the real clock (a clock a day ahead would take every live claim for dead);
    returns how many ticks ran."""
    late = _run(fleet.clones[3], fleet.homes[3], FLEET_CLOCK_OFFSET_S=TTL_PAST)
    assert late.returncode == 0 and '"ran": true' in late.stdout, late.stdout[:1500] + late.stderr
    results = _together(fleet)
    assert all(code == 0 for code, _, _ in results), [(c, o[:1500], e[-600:]) for c, o, e in results if c]
    return 1 + sum('"ran": true' in out for _, out, _ in results)


def _remote(fleet: fk.Fleet, rel: str) -> str:
    return git(fleet.bare, "show", f"refs/automaton/loops/{fk.LOOP}:{rel}")


def _log(fleet: fk.Fleet) -> list[tuple[str, dict[str, str]]]:
    out = []
    for line in _remote(fleet, ".state.log").splitlines():
        parts = line.split(" ")
        out.append((parts[1], dict(p.split("=", 1) for p in parts[2:] if "=" in p)))
    return out


def _books(fleet: fk.Fleet) -> dict[str, object]:
    """What the remote says: counts of each event, iteration_count, spent, and branch commits."""
    import json

    log = _log(fleet)
    state = json.loads(_remote(fleet, ".state.loop"))
    starts = [f["n"] for e, f in log if e == "TICK_START"]
    closed = {f["n"] for e, f in log if e == "TICK"}
    base = git(fleet.bare, "rev-parse", "main").strip()
    commits = int(git(fleet.bare, "rev-list", "--count", f"{base}..loop/{fk.LOOP}").strip())
    charged = sum(float(f["cost"]) for e, f in log if e == "TICK") + \
        sum(float(f["reserved_usd"]) for e, f in log if e == "TICK_START" and f["n"] not in closed)
    return {"starts": starts, "ticks": len(closed), "open": [n for n in starts if n not in closed],
            "iterations": state["iteration_count"], "spent": state["spent_usd"], "charged": round(charged, 6),
            "commits": commits, "abandoned": [f["n"] for e, f in log if e == "WARNING" and
                                              f.get("reason") == "abandoned_tick"]}


def _assert_whole(books: dict[str, object], ran: int) -> None:
    starts = books["starts"]
    assert isinstance(starts, list)
    assert starts == [str(i) for i in range(1, len(starts) + 1)]  # no iteration reused or skipped
    assert books["iterations"] == len(starts)
    assert books["ticks"] == books["commits"] == ran
    assert books["spent"] == books["charged"]


def test_runners_started_together_run_exactly_one_tick_per_claim(fleet: fk.Fleet) -> None:
    ran = 1  # the seed's tick
    for _ in range(ROUNDS):
        results = _together(fleet)
        assert all(code == 0 for code, _, _ in results), [(c, o[:1500], e[-600:]) for c, o, e in results if c]
        this = sum('"ran": true' in out for _, out, _ in results)
        skipped = [out for _, out, _ in results if '"skipped": "claimed"' in out]
        assert this >= 1 and this + len(skipped) == len(results), results
        ran += this
    books = _books(fleet)
    _assert_whole(books, ran)
    assert books["open"] == [] and books["abandoned"] == []
    # The account ledger in the remote (refs/automaton/account) counts exactly what the loop
    # spent: every runner reserved, and each one whose claim was lost was settled at $0.
    assert _account_counted(fleet) == round(float(str(books["spent"])) * 1_000_000)


def _account_counted(fleet: fk.Fleet) -> int:
    """Micro-USD the remote account ledger counts: settled charges, open reservations whole."""
    reserved: dict[str, int] = {}
    settled: dict[str, int] = {}
    for line in git(fleet.bare, "show", "refs/automaton/account:ledger.log").splitlines():
        parts = line.split(" ")
        fields = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
        if parts[1] in ("RESERVE", "SETTLE"):
            (reserved if parts[1] == "RESERVE" else settled)[fields["id"]] = int(fields["micro_usd"])
    return sum(settled.get(rid, micro) for rid, micro in reserved.items())


@pytest.mark.parametrize("at", ["before_claim", "after_claim", "before_final_push"])
def test_a_runner_killed_at_a_step_loses_nothing(fleet: fk.Fleet, at: str) -> None:
    killed = _run(fleet.clones[0], fleet.homes[0], FLEET_KILL_AT=at)
    assert killed.returncode == -signal.SIGKILL
    claimed = at != "before_claim"
    books = _books(fleet)
    assert books["open"] == (["2"] if claimed else [])
    if claimed:  # a young claim: the next runner runs nothing and writes nothing
        young = _run(fleet.clones[1], fleet.homes[1])
        assert young.returncode == 0 and '"claimed_at": ' in young.stdout, young.stderr
        assert _books(fleet) == books
    ran = 1 + _settle_then_together(fleet)
    books = _books(fleet)
    _assert_whole(books, ran)
    assert books["open"] == (["2"] if claimed else []) and books["abandoned"] == (["2"] if claimed else [])


def _gone(*pids: int) -> bool:
    """Whether every pid is dead, looking again for a generous while: SIGKILL and the watcher
    act asynchronously (no timing is asserted, only the end state)."""
    for _ in range(600):
        if not any(map(alive, pids)):
            return True
        time.sleep(0.05)
    return False


def _hold_agent(fleet: fk.Fleet) -> tuple[subprocess.Popen[str], int, int]:
    """Runner 0 started with its agent held: (the runner, the agent's pid, the agent's child's)."""
    hold = fleet.clones[0].parent / "hold"
    hold.write_text("x")
    proc = fk.start(fleet.clones[0], fleet.homes[0])
    pid_file = fleet.clones[0].parent / "agent.pid"
    for _ in range(600):
        if pid_file.exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    assert pid_file.exists(), proc.communicate()
    agent, kid = int(pid_file.read_text()), int((fleet.clones[0].parent / "agent.kid").read_text())
    assert alive(agent) and alive(kid)
    return proc, agent, kid


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the kernel's parent-death signal is Linux's")
def test_a_runner_killed_while_its_agent_runs_loses_nothing(fleet: fk.Fleet) -> None:
    """SIGKILL to the runner: its agent dies with it (the kernel's parent-death signal), and so
    does the agent's own child (the group watcher); the open claim is settled as before."""
    proc, agent, kid = _hold_agent(fleet)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _gone(agent, kid), [p for p in (agent, kid) if alive(p)]
    (fleet.clones[0].parent / "hold").unlink()  # the next agents on this machine do their work
    assert _books(fleet)["open"] == ["2"]
    ran = 1 + _settle_then_together(fleet)
    books = _books(fleet)
    _assert_whole(books, ran)
    assert books["abandoned"] == ["2"]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="processes are looked up in /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_runner_stopped_by_sigterm_kills_its_agent_before_it_exits(fleet: fk.Fleet, sig: signal.Signals) -> None:
    """SIGTERM (systemd, a pod stop, a CI cancel) or SIGHUP: the runner kills its agent's group
    and exits 128 + the signal with one line; the tick stays open (charged at its reservation)
    like a killed one, and the next runner past the TTL settles it."""
    proc, agent, kid = _hold_agent(fleet)
    os.kill(proc.pid, sig)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert f"stopped by signal {int(sig)}" in err and "Traceback" not in err, err
    assert not alive(agent) and not alive(kid)  # killed before the runner exited
    (fleet.clones[0].parent / "hold").unlink()
    assert _books(fleet)["open"] == ["2"]
    ran = 1 + _settle_then_together(fleet)
    _assert_whole(_books(fleet), ran)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="leftovers are found through /proc")
def test_a_remote_tick_reaps_an_orphan_before_it_judges_the_claim(fleet: fk.Fleet) -> None:
    """An agent process of this loop left on this machine (it escaped its group: setsid) is
    killed by the next --state-remote start, also when that start then skips the tick because
    another runner's claim is live: holding the tick lock here, no tick of the loop runs here."""
    claimed = _run(fleet.clones[1], fleet.homes[1], FLEET_KILL_AT="after_claim")
    assert claimed.returncode == -signal.SIGKILL
    folder = fk.project(fleet.clones[0]).loop_dir(LoopName.of(fk.LOOP))
    env = {**fk.runner_env(fleet.homes[0]), "AUTOMATON_LOOP_DIR": str(folder)}
    orphan = subprocess.Popen(["sleep", "300"], env=env, start_new_session=True)
    try:
        skipped = _run(fleet.clones[0], fleet.homes[0])
        assert skipped.returncode == 0 and '"skipped": "claimed"' in skipped.stdout, skipped.stdout + skipped.stderr
        assert orphan.wait(timeout=60) == -signal.SIGKILL
    finally:
        orphan.kill()
        orphan.wait()


def _refuse(fleet: fk.Fleet, pattern: str) -> None:
    hook = fleet.bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nif grep -q '{pattern}'; then echo 'policy: no state pushes today' >&2; exit 1; fi\n")
    hook.chmod(0o755)


def test_a_remote_that_refuses_the_claim_runs_nothing(fleet: fk.Fleet) -> None:
    before = _books(fleet)
    _refuse(fleet, "refs/automaton/loops/")
    out = _run(fleet.clones[0], fleet.homes[0])
    assert out.returncode == 1, out.stderr
    assert '"reason": "remote_refused"' in out.stdout and '"ran": false' in out.stdout
    assert "policy: no state pushes today" in out.stdout
    assert not (fleet.clones[0] / ".automaton" / "loops" / fk.LOOP / "runs" / "2").exists()
    assert _books(fleet) == before


def test_a_remote_that_refuses_the_final_push_leaves_a_claim_the_next_runner_settles(fleet: fk.Fleet) -> None:
    """Every push after the claim refused (the state ref included: a remote gone read-only): the
    claim stays open, and the next runner settles it at its reservation after the TTL. (Only the
    loop branch refused: tests/commands/test_remote_state.py, the record lands alone.)"""
    hook = fleet.bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nwhile read old new ref; do\n  case \"$ref\" in refs/automaton/loops/*)\n"
                    "    git log -1 --format=%s \"$new\" | grep -q settled &&\n"
                    "      { echo 'read-only today' >&2; exit 1; };;\n"
                    "  esac\ndone\nexit 0\n")
    hook.chmod(0o755)
    out = _run(fleet.clones[0], fleet.homes[0])
    assert out.returncode == 1 and '"pushed": false' in out.stdout, out.stdout + out.stderr
    assert _books(fleet)["open"] == ["2"]
    (fleet.bare / "hooks" / "pre-receive").unlink()
    again = _run(fleet.clones[1], fleet.homes[1], FLEET_CLOCK_OFFSET_S=TTL_PAST)
    assert again.returncode == 0 and '"ran": true' in again.stdout, again.stderr
    books = _books(fleet)
    _assert_whole(books, 2)
    assert books["abandoned"] == ["2"] and books["open"] == ["2"]


def test_a_human_act_during_a_remote_tick_says_the_ticks_record_will_not_land(fleet: fk.Fleet) -> None:
    """A pause from another clone while runner 0's agent works: it lands, and says what it
    costs (that tick's push loses its lease: charged at its reservation, the claim left open)."""
    proc, _, _ = _hold_agent(fleet)
    try:
        paused = run_cli("--pause-loop", fk.LOOP, "--state-remote", "origin", "--project", str(fleet.clones[1]))
        assert paused.code == 0, paused.out + paused.err
        assert "tick 2 of loop demo was running on a runner" in paused.err and "will not land" in paused.err
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
