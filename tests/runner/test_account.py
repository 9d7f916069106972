"""The account-wide caps in the tick: three projects' loops stop together at a daily cap and
resume in the next window (the clock injected, never slept); a bad caps file fails closed."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from automaton.core.errors import BadInput, ExitCode
from automaton.runner import account as runner_account
from automaton.runner.tick import tick
from automaton.store import account
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.helpers import init_repo
from tests.runner.loopkit import make_loop

PY = sys.executable
NOON = int(datetime(2026, 12, 6, 12, 0, tzinfo=UTC).timestamp())
NEXT_DAY = int(datetime(2026, 12, 7, 0, 0, 1, tzinfo=UTC).timestamp())


def command_loop(root: Path, name: str, *, notify_to: Path | None = None) -> Project:
    """A loop whose agent is a plain command (its cost unknown: counted at max_tick_usd $1)."""
    over: dict[str, object] = {}
    if notify_to is not None:
        over["notify"] = {"command": [PY, "-c", f"import sys; open({str(notify_to)!r}, 'a').write(sys.stdin.read()"
                                                f" + '\\n')"], "events": ["deferred"]}
    return make_loop(init_repo(root), name, harness={"name": "command", "command": [PY, "-c", "print('done')"],
                                                     "args": []}, sandbox="off",
                     roles={"implement": {"prompt": "implement.md"},
                            "verify": {"command": [PY, "-c", "print('1 passed, 1 failed')"], "score": "summary"},
                            "orchestrate": {"builtin": True}},
                     brakes={"max_iterations": 50, "max_budget_usd": 50.0, "max_tick_usd": 1.0,
                             "target_score": 1.0, "score_plateau_window": 20},
                     **over)


def set_caps(text: str) -> Path:
    where = account.caps_path()
    where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    where.write_text(text)
    return where


@pytest.fixture
def at(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The account clock, set by assigning at[0]."""
    now = [NOON]
    monkeypatch.setattr(runner_account, "clock", lambda: float(now[0]))
    return now


def test_three_projects_stop_together_at_a_daily_cap_and_resume_next_day(tmp_path: Path, at: list[int]) -> None:
    sent = tmp_path / "notified.jsonl"
    projects = [command_loop(tmp_path / f"p{i}", f"l{i}", notify_to=sent) for i in range(3)]
    set_caps('{"day_usd": 3}')
    for i, p in enumerate(projects):  # $1 each: $3 of $3 used
        out = tick(p, f"l{i}")
        assert out.code == ExitCode.OK and out.data["ran"], out.lines
    for i, p in enumerate(projects):  # every loop stops, whichever project it is in
        out = tick(p, f"l{i}")
        assert out.code == ExitCode.REFUSED and not out.data["ran"], out.lines
        assert out.data["deferred"] == {"reason": "account_cap", "until": "2026-12-07T00:00:00Z",
                                        "caps": [{"kind": "day", "cap_micro_usd": 3_000_000,
                                                  "used_micro_usd": 3_000_000}]}
        assert "deferred: account_cap" in out.lines[0] and "2026-12-07T00:00:00Z" in out.lines[0]
        assert store.read_state(p, f"l{i}").iteration_count == 1  # refused before its iteration counted
    notes = [json.loads(x) for x in sent.read_text().splitlines()]
    assert len(notes) == 1 and notes[0]["reason"] == "account_cap"  # once for the account, not per loop
    assert notes[0]["until"] == "2026-12-07T00:00:00Z"
    at[0] = NEXT_DAY
    for i, p in enumerate(projects):
        out = tick(p, f"l{i}")
        assert out.code == ExitCode.OK and out.data["ran"], out.lines
    book = account.read_ledger()
    assert [e.charged for e in book.entries] == [1_000_000] * 6
    assert {e.project for e in book.entries} == {str(p.root) for p in projects}


def test_no_caps_file_means_no_account_cap_but_spend_is_recorded(tmp_path: Path, at: list[int]) -> None:
    p = command_loop(tmp_path / "p", "l")
    assert not account.caps_path().exists()
    for _ in range(4):
        assert tick(p, "l").data["ran"]
    assert sum(e.counted for e in account.read_ledger().entries) == 4_000_000


def test_a_malformed_caps_file_fails_closed(tmp_path: Path, at: list[int]) -> None:
    p = command_loop(tmp_path / "p", "l")
    where = set_caps('{"day_usd": "three"}')
    with pytest.raises(BadInput) as exc:
        tick(p, "l")
    assert str(where) in exc.value.message and "day_usd" in exc.value.message
    assert store.read_state(p, "l").iteration_count == 0  # the tick did not run
    assert not account.ledger_path().exists()


def test_a_tick_that_dies_after_reserving_keeps_its_reservation(tmp_path: Path, at: list[int],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    p = command_loop(tmp_path / "p", "l")
    set_caps('{"day_usd": 1.5}')

    def boom(*args: object, **kwargs: object) -> object:
        raise RuntimeError("the runner died")

    from automaton.runner import tick as tick_mod

    real = tick_mod._run_roles
    monkeypatch.setattr(tick_mod, "_run_roles", boom)
    with pytest.raises(RuntimeError):
        tick(p, "l")
    monkeypatch.setattr(tick_mod, "_run_roles", real)
    at[0] = NOON + 60
    out = tick(p, "l")  # $1 open + $1 would pass $1.50
    assert out.code == ExitCode.REFUSED and out.data.get("deferred", {}).get("reason") == "account_cap", out.lines


def test_the_scheduled_entry_point_refuses_with_one_line_and_exit_1(tmp_path: Path) -> None:
    import subprocess

    p = command_loop(tmp_path / "p", "l")
    set_caps('{"month_usd": 0}')  # a zero cap stops every tick
    exe = str(Path(PY).parent / "automaton-loop")
    got = subprocess.run([exe, "--mode", "tick", "--loop", "l", "--project", str(p.root), "--quiet"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert got.returncode == 1, (got.stdout, got.stderr)
    assert "tick not run: deferred: account_cap: the account's month cap $0.00" in got.stdout
    assert "Traceback" not in got.stderr
    set_caps("{")
    got = subprocess.run([exe, "--mode", "tick", "--loop", "l", "--project", str(p.root), "--quiet"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert got.returncode == 2 and str(account.caps_path()) in got.stderr and "Traceback" not in got.stderr
    assert store.read_state(p, "l").iteration_count == 0


def test_a_ledger_that_cannot_be_settled_warns_and_keeps_the_reservation(tmp_path: Path, at: list[int],
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.core.errors import CorruptState

    p = command_loop(tmp_path / "p", "l")

    def broken(*args: object) -> None:
        raise CorruptState(f"{account.ledger_path()}: the account ledger does not verify")

    monkeypatch.setattr(account, "settle", broken)
    out = tick(p, "l")
    assert out.code == ExitCode.OK and out.data["ran"]
    assert any("account ledger not settled" in w for w in out.warnings)
    (entry,) = account.read_ledger().entries
    assert entry.charged is None and entry.counted == 1_000_000


@pytest.mark.parametrize("cost", [float("nan"), float("inf"), -1.0, True, "1.0", None])
def test_a_cost_that_is_no_finite_amount_settles_at_the_reservation(cost: object,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a finite, non-negative number is a cost; anything else counts the reservation whole
    (NaN once reached `usd_to_micro` and raised after the tick had run)."""
    from automaton.core.outcome import Outcome
    from automaton.runner import account
    from automaton.store import account as store

    got: list[int] = []
    monkeypatch.setattr(store, "settle", lambda rid, micro, now: got.append(micro))
    assert account.settle(store.Reserved("r1", 2_000_000), Outcome(data={"cost_usd": cost})) is None
    assert got == [2_000_000]
