"""`--spend`, and the account caps beside the loop's own budget in `--loop-status`."""

from __future__ import annotations

import time
from pathlib import Path

from automaton.commands.spend import account_view, spend
from automaton.store import account
from tests.commands.loopkit import loop_with
from tests.helpers import init_repo, run_cli

DAY1 = 1_796_515_200  # 2026-12-06T00:00:00Z


def set_caps(text: str) -> Path:
    where = account.caps_path()
    where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    where.write_text(text)
    return where


def book(project: str, loop: str, at: int, micro: int, charged: int | None) -> None:
    got = account.reserve(project, loop, micro, 60, at)
    assert isinstance(got, account.Reserved)
    if charged is not None:
        account.settle(got.rid, charged, at + 1)


def test_spend_by_day_loop_and_project() -> None:
    book("/a", "one", DAY1 + 100, 1_000_000, 250_000)
    book("/a", "one", DAY1 + 200, 1_000_000, None)  # unsettled: counted whole
    book("/b", "two", DAY1 + 86400 + 5, 2_000_000, 2_000_000)
    book("/b", "two", DAY1 - 86400, 9_000_000, 9_000_000)  # before --since
    out = spend("2026-12-06", now=DAY1 + 86400 + 60)
    assert out.data["since"] == "2026-12-06" and out.data["total_micro_usd"] == 3_250_000
    assert [(r["day"], r["project"], r["loop"], r["micro_usd"], r["ticks"], r["unsettled"], r["abandoned"])
            for r in out.data["rows"]] == [("2026-12-06", "/a", "one", 1_250_000, 2, 1, 1),
                                           ("2026-12-07", "/b", "two", 2_000_000, 1, 0, 0)]
    text = "\n".join(out.lines)
    assert "$3.25 in all" in text and "2026-12-06: $1.25" in text
    assert "(2 ticks, 1 unsettled: counted whole (1 abandoned: the tick died))" in text


def test_spend_cli_json_and_bad_input_is_one_line_exit_2() -> None:
    got = run_cli("--spend", "--json")
    assert got.code == 0 and got.json["rows"] == [] and got.json["account"]["caps_set"] is False
    bad = run_cli("--spend", "--since", "06/12/2026")
    assert bad.code == 2 and "--since '06/12/2026'" in bad.err and bad.err.count("\n") == 1
    where = set_caps('{"day_usd": 3,}')
    bad = run_cli("--spend")
    assert bad.code == 2 and str(where) in bad.err and "Traceback" not in bad.err
    assert run_cli("--since", "2026-12-01", "--loop-list").code == 2  # --since goes with --spend only
    twice = run_cli("--spend", "--since", "2026-12-01", "--since", "2026-11-01")
    assert twice.code == 2 and "--since given twice" in twice.err and twice.err.count("\n") == 1


def test_account_view_windows_and_caps() -> None:
    set_caps('{"day_usd": 3, "month_usd": 10}')
    book("/a", "one", DAY1 + 100, 1_000_000, 500_000)
    view = account_view(DAY1 + 3600)
    day, week, month = view["windows"]
    assert (day["cap_usd"], day["used_usd"], day["left_usd"]) == (3.0, 0.5, 2.5)
    assert week["cap_usd"] is None and month["cap_micro_usd"] == 10_000_000
    assert view["days"] == [{"day": "2026-12-06", "used_usd": 0.5}]


def test_account_view_says_what_cannot_be_read() -> None:
    where = set_caps("[]")
    view = account_view(DAY1)
    assert str(where) in view["error"] and view["windows"] == []


def test_loop_status_shows_the_account_cap_beside_the_loops(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "proj")
    loop_with(root, "demo")
    before = run_cli("--loop-status", "demo", "--project", str(root))
    assert before.code == 0 and "account caps" not in before.out  # no caps file: nothing beside
    set_caps('{"day_usd": 3}')
    book(str(root), "demo", int(time.time()), 1_000_000, 1_000_000)
    lines = run_cli("--loop-status", "demo", "--project", str(root)).out.splitlines()
    spent = next(i for i, x in enumerate(lines) if x.startswith("  spend:"))
    assert lines[spent + 1].startswith("  account caps: day $1.00 of $3.00 ($2.00 left)")
    got = run_cli("--loop-status", "demo", "--project", str(root), "--json")
    assert got.json["account"]["windows"][0]["used_micro_usd"] == 1_000_000


def test_an_early_since_prints_an_iso_day() -> None:
    out = run_cli("--spend", "--since", "0001-01-01")
    assert out.code == 0 and out.out.startswith("spend since 0001-01-01 "), (out.out, out.err)  # was 1-01-01


def test_check_gate_shows_the_account_cap_that_would_refuse_the_tick(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "proj")
    loop_with(root, "demo")
    assert run_cli("--check-gate", "demo", "--project", str(root)).code == 0  # no caps file
    set_caps('{"day_usd": 3}')
    book(str(root), "demo", int(time.time()), 2_500_000, 2_500_000)  # $0.50 left: a $2 tick does not fit
    got = run_cli("--check-gate", "demo", "--project", str(root))
    assert got.code == 1 and "gate not ok: deferred:" in got.out
    assert "account_cap: the account's day cap $3.00" in got.out
    assert "next step: none: the first tick after" in got.out
    data = run_cli("--check-gate", "demo", "--project", str(root), "--json").json
    assert data["ok"] is False and data["deferred"]["reason"] == "account_cap"
    assert data["deferred"]["caps"] == [{"kind": "day", "cap_micro_usd": 3_000_000, "used_micro_usd": 2_500_000}]
    assert data["status"] == "running" and data["halt_reason"] is None  # no halt: it waits


def test_spend_of_one_loop() -> None:
    book("/a", "one", int(time.time()) - 60, 1_000_000, 250_000)
    book("/b", "two", int(time.time()) - 30, 2_000_000, 2_000_000)
    got = run_cli("--spend", "--loop", "one", "--json")
    assert got.code == 0 and got.json["loop"] == "one" and got.json["total_micro_usd"] == 250_000
    assert [r["loop"] for r in got.json["rows"]] == ["one"]
    text = run_cli("--spend", "--loop", "one").out
    assert " of loop one: $0.25 in all" in text and "two" not in text
    assert "no ticks recorded for a loop named nobody" in run_cli("--spend", "--loop", "nobody").out


def test_spend_says_removed_for_a_loop_remove_loop_took_down(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "proj")
    loop_with(root, "gone")
    loop_with(root, "kept")
    book(str(root), "gone", int(time.time()) - 60, 1_000_000, 1_000_000)
    book(str(root), "kept", int(time.time()) - 30, 1_000_000, 1_000_000)
    assert run_cli("--remove-loop", "gone", "--project", str(root), human=True).code == 0
    text = run_cli("--spend").out
    assert f"gone (removed) in {root}" in text and f"kept in {root}" in text
    rows = run_cli("--spend", "--json").json["rows"]
    assert {r["loop"]: r["removed"] for r in rows} == {"gone": True, "kept": False}
