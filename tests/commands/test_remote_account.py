"""The account ledger and caps in a ref of the state remote (commands/remote_account.py): two
loops on two machines (fresh clones, each its own HOME, one record key) under one account cap,
runners reserving at once, a forged or rolled-back ref, a runner killed between its reservation
and its settlement, the human act that publishes the caps, and `--spend --state-remote`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.commands import remote_account as ra
from automaton.core.chain import format_line, line_hash
from automaton.core.errors import BadInput, CorruptState, Refused
from automaton.git import remote as git_remote
from automaton.store import account as store
from tests.commands.conftest import LostLeases
from tests.helpers import git, init_repo, run_cli
from tests.runner import fleetkit as fk

OTHER = "other"
MICRO = 1_000_000
NOW = 1_800_000_000


def _caps(home: Path, caps: dict[str, float]) -> None:
    folder = home / ".config" / "automaton"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    (folder / "caps.json").write_text(json.dumps(caps))


def _publish(clone: Path, home: Path, caps: dict[str, float]) -> None:
    _caps(home, caps)
    out = run_cli("--publish-caps", "--state-remote", "origin", "--project", str(clone))
    assert out.code == 0, out.out + out.err
    (home / ".config" / "automaton" / "caps.json").unlink()  # from here on only the published caps hold


def _tick(clone: Path, home: Path, loop: str = fk.LOOP, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(fk.runner_argv(clone, loop), env=fk.runner_env(home, **extra), capture_output=True,
                          text=True, timeout=300, check=False)


def _ledger(bare: Path) -> list[tuple[str, dict[str, str]]]:
    out = []
    for line in git(bare, "show", f"{ra.ACCOUNT_REF}:{ra.LEDGER_FILE}").splitlines():
        parts = line.split(" ")
        out.append((parts[1], dict(p.split("=", 1) for p in parts[2:] if "=" in p)))
    return out


def _counted(bare: Path) -> int:
    """Micro-USD the remote ledger counts: settled charges, unsettled reservations whole."""
    reserved = {f["id"]: int(f["micro_usd"]) for e, f in _ledger(bare) if e == "RESERVE"}
    settled = {f["id"]: int(f["micro_usd"]) for e, f in _ledger(bare) if e == "SETTLE"}
    return sum(settled.get(rid, micro) for rid, micro in reserved.items())


def _loop_charges(bare: Path, loop: str) -> int:
    log = git(bare, "show", f"refs/automaton/loops/{loop}:.state.log")
    costs = [float(p.split("=", 1)[1]) for line in log.splitlines() if " TICK " in line
             for p in line.split(" ") if p.startswith("cost=")]
    return round(sum(costs) * MICRO)


def _deferred(out: subprocess.CompletedProcess[str]) -> bool:
    if out.returncode != 1:
        return False
    data = json.loads(out.stdout.strip().splitlines()[-1])
    return data.get("ran") is False and data.get("deferred", {}).get("reason") == "account_cap"


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str) -> fk.Fleet:
    """Two loops (demo, other) published from the seed under a published cap of $3.00 a month,
    one tick each ($1.00 each); two fresh clones on machines of their own."""
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    made = fk.make_fleet(tmp_path, 2)
    fk.add_loop(made.seed, OTHER)
    home = Path(os.environ["HOME"])
    _publish(made.seed, home, {"month_usd": 3})
    for loop in (fk.LOOP, OTHER):
        first = _tick(made.seed, home, loop)
        assert first.returncode == 0 and '"ran": true' in first.stdout, first.stdout + first.stderr
    return made


def test_two_loops_on_two_machines_stop_together_at_the_account_cap(fleet: fk.Fleet) -> None:
    (m0, h0), (m1, h1) = zip(fleet.clones, fleet.homes, strict=True)
    ran = _tick(m0, h0, fk.LOOP)  # $3.00 of $3.00 with the seed's two ticks
    assert ran.returncode == 0 and '"ran": true' in ran.stdout, ran.stdout + ran.stderr
    stopped = _tick(m1, h1, OTHER)  # the other machine, the other loop: the cap is the account's
    assert _deferred(stopped), stopped.stdout + stopped.stderr
    caps = json.loads(stopped.stdout.strip().splitlines()[-1])["deferred"]["caps"]
    assert caps == [{"kind": "month", "cap_micro_usd": 3 * MICRO, "used_micro_usd": 3 * MICRO}]
    again = _tick(m0, h0, fk.LOOP)
    assert _deferred(again), again.stdout + again.stderr
    assert not (m1 / ".automaton" / "loops" / OTHER / "runs" / "2").exists()
    assert not (m0 / ".automaton" / "loops" / fk.LOOP / "runs" / "3").exists()
    # The remote ledger holds every tick's charge once, and no machine's own ledger holds any.
    events = [e for e, _ in _ledger(fleet.bare)]
    assert events.count("RESERVE") == events.count("SETTLE") == 3
    assert events.count("CAP_REACHED") == 1  # announced once for the account, by the first to meet it
    assert _counted(fleet.bare) == _loop_charges(fleet.bare, fk.LOOP) + _loop_charges(fleet.bare, OTHER) == 3 * MICRO
    for home in (Path(os.environ["HOME"]), h0, h1):
        assert not (home / ".config" / "automaton" / "account" / "ledger.log").exists()


def test_spend_with_a_state_remote_reads_the_remote_ledger(fleet: fk.Fleet) -> None:
    out = run_cli("--spend", "--state-remote", "origin", "--project", str(fleet.clones[0]), "--json")
    assert out.code == 0, out.err
    data = json.loads(out.out.strip().splitlines()[-1])
    assert data["total_micro_usd"] == 2 * MICRO
    assert {r["loop"] for r in data["rows"]} == {fk.LOOP, OTHER}
    month = next(w for w in data["account"]["windows"] if w["kind"] == "month")
    assert month["cap_micro_usd"] == 3 * MICRO and month["used_micro_usd"] == 2 * MICRO


def _forge(fleet: fk.Fleet, tmp_path: Path, edit: str) -> None:
    """Someone with push rights but without the record key rewrites the account ref (a child
    of the current commit, so only the key can catch it)."""
    work = tmp_path / "forger"
    git(tmp_path, "clone", "-q", str(fleet.bare), str(work))
    git(work, "fetch", "-q", "origin", f"{ra.ACCOUNT_REF}:refs/forge")
    git(work, "checkout", "-q", "refs/forge")
    log = work / ra.LEDGER_FILE
    text = log.read_text()
    last = text.splitlines()[-1]
    if edit == "raised_caps":  # the CAPS line's amount, its mac left as it was
        log.write_text(text.replace("month=3000000", "month=300000000"))
    elif edit == "unkeyed_caps":  # a new CAPS line that links, without a mac
        body = format_line("2026-12-06T00:00:00Z", "CAPS", {"month": 300 * MICRO, "by": "x", "at": 1}, "-",
                           line_hash(last))
        log.write_text(text + body + "\n")
    elif edit == "other_key":  # a whole new ledger, keyed with another key
        body = format_line("2026-12-06T00:00:00Z", "CAPS", {"month": 300 * MICRO, "by": "x", "at": 1}, "-",
                           "0" * 64, bytes.fromhex("77" * 32))
        log.write_text(body + "\n")
    elif edit == "cut":  # a tick's spend dropped: its reservation taken out of the chain
        lines = text.splitlines(keepends=True)
        first = next(i for i, line in enumerate(lines) if " RESERVE " in line)
        log.write_text("".join(lines[:first] + lines[first + 1:]))
    elif edit == "truncated":  # every spend dropped: the ledger cut after its CAPS line
        log.write_text(text.splitlines(keepends=True)[0])
    else:  # another file beside the ledger
        (work / "caps.json").write_text('{"month_usd": 300}')
        git(work, "add", "caps.json")
    git(work, "commit", "-qam", "forged")
    git(work, "push", "-q", "--force", "origin", f"HEAD:{ra.ACCOUNT_REF}")


@pytest.mark.parametrize("edit", ["raised_caps", "unkeyed_caps", "other_key", "cut", "extra_file"])
def test_a_forged_account_ref_runs_nothing(fleet: fk.Fleet, tmp_path: Path, edit: str) -> None:
    before = git(fleet.bare, "rev-parse", f"refs/automaton/loops/{fk.LOOP}").strip()
    _forge(fleet, tmp_path, edit)
    out = _tick(fleet.clones[0], fleet.homes[0])
    assert out.returncode == 2, out.stdout + out.stderr
    assert "the account ledger does not verify" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (fleet.clones[0] / ".automaton" / "loops" / fk.LOOP / "runs" / "2").exists()
    assert git(fleet.bare, "rev-parse", f"refs/automaton/loops/{fk.LOOP}").strip() == before  # no claim


@pytest.mark.parametrize("how", ["moved_back", "truncated", "deleted"])
def test_an_account_ledger_moved_back_or_cut_short_runs_nothing(fleet: fk.Fleet, tmp_path: Path, how: str) -> None:
    m0, h0 = fleet.clones[0], fleet.homes[0]
    older = git(fleet.bare, "rev-parse", f"{ra.ACCOUNT_REF}~2").strip()  # before the seed's last tick
    ran = _tick(m0, h0)  # this clone reads (and then writes) the account ref
    assert ran.returncode == 0 and '"ran": true' in ran.stdout, ran.stdout + ran.stderr
    # With the push credential (never an agent's, S40): less spend, every line still keyed.
    if how == "moved_back":
        git(fleet.bare, "update-ref", ra.ACCOUNT_REF, older)
    elif how == "deleted":
        git(fleet.bare, "update-ref", "-d", ra.ACCOUNT_REF)
    else:  # a child commit whose ledger stops after its first line: it verifies with the key
        _forge(fleet, tmp_path, "truncated")
    out = _tick(m0, h0)
    assert out.returncode == 2 and "rolled back or cut short" in out.stderr, out.stdout + out.stderr
    assert not (m0 / ".automaton" / "loops" / fk.LOOP / "runs" / "3").exists()


@pytest.mark.parametrize("at", ["after_reserve", "after_claim"])
def test_a_runner_killed_between_reserve_and_settle_stays_counted(fleet: fk.Fleet, at: str) -> None:
    (m0, h0), (m1, h1) = zip(fleet.clones, fleet.homes, strict=True)
    killed = _tick(m0, h0, fk.LOOP, FLEET_KILL_AT=at)
    assert killed.returncode == -signal.SIGKILL
    entries = {f["id"]: f for e, f in _ledger(fleet.bare) if e == "RESERVE"}
    settled = {f["id"] for e, f in _ledger(fleet.bare) if e == "SETTLE"}
    assert len(entries) == 3 and len(entries.keys() - settled) == 1  # the killed tick's, unsettled
    assert _counted(fleet.bare) == 3 * MICRO  # counted at its reservation: the cap is reached
    # The other machine's loop (or, past the claim's TTL, this loop) meets the cap.
    stopped = _tick(m1, h1, OTHER)
    assert _deferred(stopped), stopped.stdout + stopped.stderr
    late = _tick(m1, h1, fk.LOOP, FLEET_CLOCK_OFFSET_S=str(24 * 3600))
    assert _deferred(late), late.stdout + late.stderr
    assert _counted(fleet.bare) == 3 * MICRO


def test_publishing_caps_is_a_human_act(fleet: fk.Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    before = git(fleet.bare, "rev-parse", ra.ACCOUNT_REF).strip()
    _caps(Path(os.environ["HOME"]), {"month_usd": 300})
    monkeypatch.setenv("AUTOMATON_LOOP", fk.LOOP)  # an agent's shell
    out = run_cli("--publish-caps", "--state-remote", "origin", "--project", str(fleet.seed))
    assert out.code == 1 and "human" in out.err, out.out + out.err
    monkeypatch.delenv("AUTOMATON_LOOP")
    monkeypatch.delenv("AUTOMATON_APPROVER")
    out = run_cli("--publish-caps", "--state-remote", "origin", "--project", str(fleet.seed), human=False)
    assert out.code == 1, out.out + out.err
    assert git(fleet.bare, "rev-parse", ra.ACCOUNT_REF).strip() == before
    usage = run_cli("--publish-caps", "--project", str(fleet.seed))
    assert usage.code == 2 and "--state-remote" in usage.err


# ---- the ledger alone: no loop, many runners ---------------------------------------------------

def _clones(tmp_path: Path, n: int) -> tuple[Path, list[Path]]:
    """A bare state remote and `n` fresh clones of it, each on a machine of its own (a HOME)."""
    seed = init_repo(tmp_path / "seed")
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    clones = []
    for i in range(n):
        clone = tmp_path / f"m{i}" / "work"
        (tmp_path / f"m{i}" / "home").mkdir(parents=True)
        git(tmp_path, "clone", "-q", str(bare), str(clone))
        clones.append(clone)
    return bare, clones


@pytest.fixture
def machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Path]]:
    """A bare state remote and four fresh clones of it (no loop needed for the ledger)."""
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    return _clones(tmp_path, 4)


# Says "ready" once imported, reserves $1.00 as soon as the file argv[2] exists (so every runner
# pushes in the same instant, as the runners cron starts in the same minute do), and prints its
# answer and the seconds the reservation took.
RESERVE = "import os, sys, time\n" \
          "from pathlib import Path\n" \
          "from automaton.commands.remote_account import Remote\n" \
          "from automaton.store import account\n" \
          "print('ready', flush=True)\n" \
          "while not os.path.exists(sys.argv[2]):\n" \
          "    time.sleep(0.005)\n" \
          "began = time.monotonic()\n" \
          "got = Remote(Path(sys.argv[1]), 'origin').reserve(sys.argv[1], 'demo', 1000000, 600, int(time.time()))\n" \
          "print('reserved' if isinstance(got, account.Reserved) else 'refused', round(time.monotonic() - began, 2))\n"


def _reserve_at_once(clones: list[Path], go: Path) -> list[tuple[str, float]]:
    """Every clone's runner reserves $1.00 in one instant (when `go` is made): (its answer,
    seconds it took) each; fails on a runner that exited non-zero (gave up)."""
    procs = [subprocess.Popen([sys.executable, "-c", RESERVE, str(c), str(go)], env=fk.runner_env(c.parent / "home"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in clones]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline() == "ready\n", p.communicate(timeout=60)
    go.touch()
    said = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.strip().splitlines()[-1:]
        what, took = out.split()
        said.append((what, float(took)))
    return said


def test_runners_reserving_at_once_never_pass_the_cap(machines: tuple[Path, list[Path]], approver: str) -> None:
    bare, clones = machines
    _publish(clones[0], Path(os.environ["HOME"]), {"day_usd": 2, "week_usd": 2, "month_usd": 2})
    said = [what for what, _ in _reserve_at_once(clones, bare.parent / "go")]
    assert sorted(said) == ["refused", "refused", "reserved", "reserved"]
    assert _counted(bare) == 2 * MICRO
    assert [e for e, _ in _ledger(bare)].count("CAP_REACHED") == 1


FLEET = 12  # a dozen loops whose runners cron starts in the same minute (red team G11)


@pytest.mark.parametrize(("cap_usd", "fits"), [(FLEET, FLEET), (5, 5)], ids=["all-fit", "five-fit"])
def test_a_dozen_runners_reserving_in_the_same_instant_all_land_and_never_pass_the_cap(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approver: str, cap_usd: int, fits: int) -> None:
    """Each lost lease reads and decides again after a random wait, for up to a bound in
    seconds: no runner gives up (exit 1, nothing run) while the others take their turns, and
    the runners past the cap are refused on a ledger that holds every earlier reservation."""
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", fk.KEY)
    bare, clones = _clones(tmp_path, FLEET)
    _publish(clones[0], Path(os.environ["HOME"]), {"day_usd": cap_usd})
    said = _reserve_at_once(clones, tmp_path / "go")
    assert sorted(what for what, _ in said) == ["refused"] * (FLEET - fits) + ["reserved"] * fits
    assert _counted(bare) == fits * MICRO
    events = [e for e, _ in _ledger(bare)]
    assert events.count("RESERVE") == fits and events.count("CAP_REACHED") == (fits < FLEET)
    print(f"{FLEET} runners under a ${cap_usd} cap: slowest {max(t for _, t in said):.2f} s")


def test_a_lost_lease_decides_again_on_the_ledger_it_lost_to(machines: tuple[Path, list[Path]], approver: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner whose push lost to another's reservation never pushes the decision it made on
    the older ledger: it reads again and is refused, as the cap no longer fits it."""
    bare, clones = machines
    _publish(clones[0], Path(os.environ["HOME"]), {"day_usd": 2})
    real_push = git_remote.push
    pushes: list[int] = []

    def overtaken(*args: Any, **kwargs: Any) -> git_remote.Pushed:
        pushes.append(1)
        if len(pushes) == 1:  # another runner reserves $1.50 between this one's read and its push
            other = ra.Remote(clones[1], "origin").reserve("p", "other", 3 * MICRO // 2, 600, NOW)
            assert isinstance(other, store.Reserved)
        return real_push(*args, **kwargs)
    monkeypatch.setattr(git_remote, "push", overtaken)
    got = ra.Remote(clones[2], "origin").reserve("p", "demo", MICRO, 600, NOW)
    assert isinstance(got, store.Refused) and got.first  # decided on the new ledger: $2.50 would pass $2
    assert len(pushes) == 3  # its RESERVE (lost), the other runner's RESERVE, its CAP_REACHED
    assert _counted(bare) == 3 * MICRO // 2
    assert [e for e, _ in _ledger(bare)] == ["CAPS", "RESERVE", "CAP_REACHED"]


def test_a_write_that_keeps_losing_gives_up_after_the_bound_in_seconds(
        machines: tuple[Path, list[Path]], approver: str, lost_leases: Callable[[], LostLeases]) -> None:
    bare, clones = machines
    book = ra.Remote(clones[1], "origin")
    got = book.reserve("p", "demo", MICRO, 600, NOW)
    assert isinstance(got, store.Reserved)
    head = git(bare, "rev-parse", ra.ACCOUNT_REF).strip()
    lost = lost_leases()
    for write in (lambda: book.reserve("p", "demo", MICRO, 600, NOW), lambda: book.settle(got.rid, MICRO, NOW)):
        with pytest.raises(Refused, match=r"lost to other runners' pushes for 1[2-3]\d s; nothing was run"):
            write()
    assert git(bare, "rev-parse", ra.ACCOUNT_REF).strip() == head
    assert lost.pushes > 8 and len(lost.waits) == lost.pushes - 2  # a wait between every two tries of each write
    assert all(0 <= w <= git_remote.LEASE_WAIT_CAP_S for w in lost.waits)


def test_a_reservation_settles_once_and_a_cap_refuses_with_its_window(machines: tuple[Path, list[Path]],
                                                                     approver: str) -> None:
    bare, clones = machines
    book = ra.Remote(clones[1], "origin")
    got = book.reserve("p", "demo", 2 * MICRO, 600, 1_800_000_000)  # no caps published: recorded, admitted
    assert isinstance(got, store.Reserved)
    book.settle(got.rid, MICRO // 2, 1_800_000_001)
    book.settle(got.rid, 7 * MICRO, 1_800_000_002)  # settled already: nothing changes
    assert _counted(bare) == MICRO // 2
    _publish(clones[0], Path(os.environ["HOME"]), {"day_usd": 1})
    refused = book.reserve("p", "demo", MICRO, 600, 1_800_000_003)
    assert isinstance(refused, store.Refused) and refused.first
    assert [u.window.kind for u in refused.refusal.reached] == ["day"]
    assert not book.reserve("p", "demo", MICRO, 600, 1_800_000_004).first  # type: ignore[union-attr]
    # This machine's caps.json, lower than the published one, holds too.
    _caps(Path(os.environ["HOME"]), {"day_usd": 0.7})
    assert isinstance(book.reserve("p", "demo", MICRO // 10, 600, 1_800_000_005), store.Reserved)
    refused = book.reserve("p", "demo", MICRO // 2, 600, 1_800_000_006)
    assert isinstance(refused, store.Refused) and refused.refusal.reached[0].cap == 700_000


def test_a_ledger_of_another_key_is_refused_before_anything_is_written(machines: tuple[Path, list[Path]],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    bare, clones = machines
    book = ra.Remote(clones[0], "origin")
    assert isinstance(book.reserve("p", "demo", MICRO, 600, 1_800_000_000), store.Reserved)
    head = git(bare, "rev-parse", ra.ACCOUNT_REF).strip()
    monkeypatch.setenv("AUTOMATON_RECORD_KEY", "77" * 32)
    with pytest.raises(CorruptState, match="does not verify"):
        ra.Remote(clones[1], "origin").reserve("p", "demo", MICRO, 600, 1_800_000_001)
    assert git(bare, "rev-parse", ra.ACCOUNT_REF).strip() == head


def test_the_merged_caps_take_the_lower_of_each_kind() -> None:
    from automaton.core.account import Caps

    assert ra.merged(None, None) is None
    assert ra.merged(Caps(day=5), None) == Caps(day=5)
    assert ra.merged(None, Caps(week=2)) == Caps(week=2)
    assert ra.merged(Caps(day=5, month=9), Caps(day=3, week=4)) == Caps(day=3, week=4, month=9)


def test_a_remote_that_is_no_remote_spelling_is_refused(project: Path) -> None:
    out = run_cli("--spend", "--state-remote=-oops", "--project", str(project))
    assert out.code == 2 and "not a git remote name or URL" in out.err, out.out + out.err
    with pytest.raises(BadInput, match="not a git remote name or URL"):
        ra.read(project, "ext::sh -c touch% /tmp/x")


def test_a_fetch_another_process_of_the_clone_overtook_is_read_again_not_called_a_rollback(
        fleet: fk.Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several loops of one checkout tick at once: one fetches the account ref, a sibling pushes
    and moves the clone's mark meanwhile. The first one's older commit is read again, never
    taken for a rollback (which stays one when the mark did not move during the fetch)."""
    seed = fleet.seed
    older = git(fleet.bare, "rev-parse", f"{ra.ACCOUNT_REF}~1").strip()
    newest = git(fleet.bare, "rev-parse", ra.ACCOUNT_REF).strip()
    mark = ra.seen_ref("origin")
    real = ra.git_remote.fetch_ref
    calls: list[int] = []

    def overtaken(root: Path, remote: str, ref: str, local: str, **kw: bool) -> str | None:
        calls.append(1)
        if len(calls) > 1:
            return real(root, remote, ref, local, **kw)
        git(seed, "update-ref", mark, newest)  # the sibling's push lands during this fetch
        git(seed, "update-ref", local, older)
        return older

    git(seed, "update-ref", mark, older)
    monkeypatch.setattr(ra.git_remote, "fetch_ref", overtaken)
    got = ra.read(seed.resolve(), "origin")
    assert got.commit == newest and len(calls) == 2
    monkeypatch.setattr(ra.git_remote, "fetch_ref", real)
    git(fleet.bare, "update-ref", ra.ACCOUNT_REF, older)  # a real move back, the mark already past it
    with pytest.raises(CorruptState, match="rolled back or cut short"):
        ra.read(seed.resolve(), "origin")


def test_doctor_checks_the_account_ledger_a_remote_tick_would_stop_on(fleet: fk.Fleet) -> None:
    """`--doctor --loop NAME --state-remote REMOTE` (a CI job's preflight) reads the account
    ledger and this machine's caps.json as the tick will: ok, then the problem once either is
    broken (an account ref at a blob; a malformed caps.json)."""
    m0, h0 = fleet.clones[0], fleet.homes[0]
    argv = ["--doctor", "--loop", fk.LOOP, "--state-remote", "origin", "--project", str(m0)]

    def doctor() -> str:
        done = subprocess.run([sys.executable, "-m", "automaton", *argv], env=fk.runner_env(h0),
                              capture_output=True, text=True, check=False)
        return done.stdout + done.stderr

    assert "account ledger in state remote origin verifies with the record key" in doctor()
    _caps(h0, {"day_usd": "three"})  # type: ignore[dict-item]
    assert "PROBLEM" in doctor() and "caps.json" in doctor()
    (h0 / ".config" / "automaton" / "caps.json").unlink()
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=fleet.bare, input=b"x\n",
                          capture_output=True, check=True).stdout.decode().strip()
    git(fleet.bare, "update-ref", ra.ACCOUNT_REF, blob)
    said = doctor()
    assert "PROBLEM" in said and "refs/automaton/account on 'origin' is a blob" in said, said
