"""`--loop-status` and the new `--loop-list` columns, on real loops, real git and a fake crontab."""

from __future__ import annotations

import platform
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from automaton.commands.loop_status import score_text, sparkline
from automaton.commands.schedule_info import next_cron_fire
from automaton.core.names import LoopName
from automaton.store import loops
from automaton.store.layout import Project
from tests.commands.loopkit import add_worktree, loop_with, tick
from tests.helpers import Result, git, run_cli, via_json
from tests.schedulers.fakes import install_crontab


def cli(p: Project, *args: str) -> Result:
    return run_cli(*args, "--project", str(p.root))


def status(p: Project, name: str = "demo") -> Result:
    return cli(p, "--loop-status", name)


@pytest.fixture
def crontab(fake_bin: Callable[[str, str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    table = tmp_path / "crontab.txt"
    install_crontab(fake_bin, table)
    return table


@pytest.mark.parametrize(("score", "shown"), [
    (0.9993, "0.9993"), (0.99995, "0.9999"), (0.99999999, "0.9999"), (1.0, "1.00"), (0.5, "0.50"),
    (0.29, "0.29"), (0.123456, "0.1234"), (0.0, "0.00"), (0.25, "0.25"), (None, "unscored"),
])
def test_scores_never_round_up_to_a_pass(score: float | None, shown: str) -> None:
    assert score_text(score) == shown


def test_sparkline_is_on_the_fixed_zero_to_one_scale() -> None:
    assert sparkline([0.0, 0.25, 0.5, 0.75, 0.9993, 1.0]) == "▁▃▅▇██"
    assert sparkline([0.25, 0.25, 0.25]) == "▃▃▃"  # flat stays flat, however small the range
    assert sparkline([]) == ""


def test_status_of_a_fresh_loop(project: Path) -> None:
    p = loop_with(project)
    r = status(p)
    assert r.code == 0, r.err
    assert r.out.splitlines() == [
        "loop demo: running",
        "  iterations: 0 used of 25 since approval, 25 left (0 in all)",
        "  spend: $0.0000 used of $10.0000 since approval, $10.0000 left (reported $0.0000, counted at the tick cap"
        " $0.0000; $0.0000 in all)",
        "  scores: none yet",
        "  last tick: none yet",
        "  schedule: not scheduled",
        "  worktree: none yet (the first tick creates it)",
        "  next step: automaton --install-schedule demo",
    ]


def test_counts_spend_split_and_every_score(project: Path) -> None:
    p = loop_with(project)
    tick(p, 0.5, {"implement": 0.10})
    tick(p, 0.75, {"implement": 0.20, "verify": None})  # one unknown cost: counted at the 2.0 cap
    tick(p, None, {"implement": 0.05})  # unscored: no bar, but its cost counts
    tick(p, 0.9993, {"implement": 0.30})
    d = cli(p, "--loop-status", "demo", "--json").json
    assert d["iterations"] == {"used": 4, "max": 25, "left": 21, "total": 4}
    sp = d["spend_usd"]
    assert sp["used"] == pytest.approx(2.65) and sp["total"] == pytest.approx(2.65)
    assert sp["known"] == pytest.approx(0.65) and sp["counted_at_cap"] == pytest.approx(2.0)
    assert sp["left"] == pytest.approx(7.35) and sp["max"] == 10.0 and sp["reserved"] == 0
    assert d["scores"] == [{"n": 1, "score": 0.5}, {"n": 2, "score": 0.75}, {"n": 4, "score": 0.9993}]
    assert d["sparkline"] == "▅▇█"
    assert d["last_tick"]["n"] == 4 and d["last_tick"]["verdict"]["score"] == 0.9993
    text = status(p).out
    assert "  scores: ▅▇█ 0.50 -> 0.9993 (best 0.9993, 3 scored ticks)" in text
    assert "  last tick: 4 at 2026-12-01T00:00:00Z, score 0.9993 (tick 4)" in text
    assert "1.00" not in text  # 0.9993 never reads as a pass
    assert "(reported $0.6500, counted at the tick cap $2.0000; $2.6500 in all)" in text


def test_scores_span_every_tick_not_the_plateau_window_and_spend_restarts_at_approval(
        project: Path, approver: str) -> None:
    p = loop_with(project, brakes={"score_plateau_window": 2, "max_iterations": 3})
    for score in (0.1, 0.2, 0.3):
        tick(p, score, {"implement": 1.0})
    assert cli(p, "--check-gate", "demo").code == 1  # iterations_exhausted
    assert cli(p, "--approve", "--loop", "demo").code == 0
    tick(p, 0.4, {"implement": None})
    d = cli(p, "--loop-status", "demo", "--json").json
    assert [s["score"] for s in d["scores"]] == [0.1, 0.2, 0.3, 0.4]  # the state keeps only the last 2
    assert loops.read_state(p, "demo").score_history == (0.4,)
    assert d["iterations"] == {"used": 1, "max": 3, "left": 2, "total": 4}
    sp = d["spend_usd"]
    assert (sp["used"], sp["known"], sp["counted_at_cap"], sp["total"]) == (2.0, 0.0, 2.0, 5.0)


def test_a_tick_that_died_is_shown_as_held_at_the_cap(project: Path) -> None:
    p = loop_with(project)
    tick(p, 0.5, {"implement": 0.1})
    loops.update_state(p, "demo", via_json("TICK_START", {"n": 2, "reserved_usd": "2.0"},
                       lambda s: s.update(iteration_count=2, spent_usd=round(s["spent_usd"] + 2.0, 6))))
    d = cli(p, "--loop-status", "demo", "--json").json
    assert d["spend_usd"]["reserved"] == 2.0 and d["spend_usd"]["used"] == pytest.approx(2.1)
    assert "held by an unsettled tick $2.0000" in status(p).out
    loops.update_state(p, "demo", via_json("TICK_START", {"n": 3, "reserved_usd": "2.0"},
                       lambda s: s.update(iteration_count=3, spent_usd=round(s["spent_usd"] + 2.0, 6))))
    d = cli(p, "--loop-status", "demo", "--json").json
    assert d["spend_usd"]["unsettled_ticks"] == 2
    assert "held by 2 unsettled ticks $4.0000" in status(p).out


def test_halted_loop_says_why_and_what_to_run(project: Path) -> None:
    p = loop_with(project, brakes={"max_iterations": 1})
    tick(p, 0.25, {"implement": 0.1})
    assert cli(p, "--check-gate", "demo").code == 1
    out = status(p).out.splitlines()
    assert out[0] == "loop demo: halted (iterations_exhausted: 1 of 1 iterations used)"
    assert out[-1] == "  next step: automaton --approve --loop demo"


def test_schedule_next_fire_and_a_complete_loop_whose_schedule_still_fires(project: Path, crontab: Path) -> None:
    p = loop_with(project)
    assert cli(p, "--install-schedule", "demo").code == 0
    d = cli(p, "--loop-status", "demo", "--json").json
    s = d["schedule"]
    assert (s["installed"], s["scheduler"], s["spec"], s["unit"], s["interval_seconds"]) == (
        True, "cron", "*/15 * * * *", "present", 900)
    fire = datetime.fromisoformat(s["next_fire"].replace("Z", "+00:00"))
    now = datetime.now(UTC)
    assert now < fire <= now + timedelta(minutes=15, seconds=1) and fire.astimezone().minute % 15 == 0
    assert f"  schedule: cron */15 * * * * (every 900 s), enabled, next fire {s['next_fire']}" in status(p).out
    tick(p, 1.0, {"implement": 0.1}, complete=True)
    assert "  schedule: cron */15 * * * * (every 900 s): still enabled though the loop is complete; its next fire" \
           " is refused and turns it off (or automaton --uninstall-schedule demo)" in status(p).out
    assert d["next_step"] is None
    assert cli(p, "--loop-status", "demo", "--json").json["next_step"].startswith("automaton --rearm-loop demo")


def test_a_halted_loop_shows_its_schedule_disabled_and_a_lost_block_as_a_problem(project: Path,
                                                                                 crontab: Path) -> None:
    p = loop_with(project, brakes={"max_iterations": 1})
    assert cli(p, "--install-schedule", "demo").code == 0
    crontab.write_text("")  # someone emptied the crontab: the record says enabled, nothing fires
    s = cli(p, "--loop-status", "demo", "--json").json["schedule"]
    assert s["unit"] == "missing" and "run automaton --install-schedule demo" in s["problem"]
    assert cli(p, "--install-schedule", "demo").code == 0
    tick(p, 0.5, {"implement": 0.1})
    assert cli(p, "--check-gate", "demo").code == 1  # the halt disables the schedule
    assert "# automaton-loop:demo" not in crontab.read_text()
    assert "  schedule: cron (every 900 s), disabled while the loop is halted" in status(p).out


@pytest.mark.parametrize(("spec", "now", "fire"), [
    ("*/15 * * * *", "2026-12-01T10:07:31", "2026-12-01T10:15:00"),
    ("*/15 * * * *", "2026-12-01T10:15:00", "2026-12-01T10:30:00"),  # strictly after now
    ("* * * * *", "2026-12-01T23:59:59", "2026-12-02T00:00:00"),
    ("0 */2 * * *", "2026-12-01T10:00:00", "2026-12-01T12:00:00"),
    ("0 * * * *", "2026-12-01T10:59:00", "2026-12-01T11:00:00"),
    ("0 0 * * *", "2026-12-01T10:00:00", "2026-12-02T00:00:00"),
    ("0 0 1 * *", "2026-12-01T10:00:00", None),  # hand-edited: not guessed at
])
def test_next_cron_fire(spec: str, now: str, fire: str | None) -> None:
    tz = timezone(timedelta(hours=2))
    got = next_cron_fire(spec, datetime.fromisoformat(now).replace(tzinfo=tz))
    assert (got.replace(tzinfo=None).isoformat() if got else None) == fire


def test_worktree_ahead_and_behind_its_base_branch(project: Path) -> None:
    p = loop_with(project)
    wt = add_worktree(p)
    for n in (1, 2):
        (wt / f"f{n}.py").write_text("x\n")
        git(wt, "add", "-A")
        git(wt, "commit", "-q", "-m", f"tick {n}")
    (project / "other.txt").write_text("y\n")
    git(project, "add", "other.txt")
    git(project, "commit", "-q", "-m", "main moves on")
    w = cli(p, "--loop-status", "demo", "--json").json["worktree"]
    assert (w["branch"], w["exists"], w["base"], w["ahead"], w["behind"]) == ("loop/demo", True, "main", 2, 1)
    assert f"  worktree: {wt} on loop/demo: 2 ahead of, 1 behind main" in status(p).out
    git(project, "worktree", "remove", "--force", str(wt))
    git(project, "branch", "-D", "loop/demo")
    w = cli(p, "--loop-status", "demo", "--json").json["worktree"]
    assert w["exists"] is False and w["ahead"] is None and w["error"]


def test_unknown_loop_and_bad_name_are_one_line_exit_2(project: Path) -> None:
    p = Project(project)
    for name in ("nope", "Bad Name"):
        r = status(p, name)
        assert r.code == 2 and r.out == "" and len(r.err.splitlines()) == 1 and "Traceback" not in r.err


def test_loop_list_gains_spend_and_last_score(project: Path) -> None:
    p = loop_with(project)
    loop_with(project, "idle")
    tick(p, 0.9993, {"implement": 0.25})
    rows = {r["name"]: r for r in cli(p, "--loop-list", "--json").json["loops"]}
    assert set(rows["demo"]) >= {"name", "status", "halt_reason", "iteration_count", "started_at", "task", "flag",
                                 "spent_usd", "last_score"}
    assert (rows["demo"]["spent_usd"], rows["demo"]["last_score"]) == (0.25, 0.9993)
    assert (rows["idle"]["spent_usd"], rows["idle"]["last_score"]) == (0.0, None)
    table = cli(p, "--loop-list").out.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "HALT_REASON", "ITER", "SPENT_USD", "SCORE", "STARTED_AT"]
    demo = next(line for line in table if line.split()[0] == "demo").split()
    assert demo[:6] == ["demo", "running", "-", "1", "0.2500", "0.9993"]
    idle = next(line for line in table if line.split()[0] == "idle").split()
    assert idle[4:6] == ["0.0000", "-"]


def test_a_corrupt_state_is_one_line_naming_the_file(project: Path, approver: str) -> None:
    p = loop_with(project)
    state = p.loop_dir(LoopName("demo")) / loops.STATE_FILE
    state.write_text("{")
    r = status(p)
    assert r.code == 2 and r.out == "" and str(state) in r.err and len(r.err.splitlines()) == 1
    d = cli(p, "--doctor", "--json")
    assert d.code == 1 and any(f["check"] == "state" and str(state) in f["message"] for f in d.json["findings"])
    assert cli(p, "--rearm-loop", "demo").code == 2
    assert cli(p, "--remove-loop", "demo").code == 0  # removing it keeps the broken file as found
    [archive] = (p.loops_dir / ".archive").iterdir()
    assert (archive / loops.STATE_FILE).read_text() == "{"
