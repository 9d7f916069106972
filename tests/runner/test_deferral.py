"""A usage limit puts the tick off: no iteration counted, only what was spent charged, every loop
on the same agent account held by the gate until the reset, and the ledger still checks out.

The fake agents here are `claude` executables first on PATH printing Claude Code's real
usage-limit results; they record their argv beside themselves, outside the worktree, so these
loops run with `"sandbox": "off"` (the sandbox has its own suite)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from automaton.commands.loop_status import loop_status
from automaton.commands.loops import check_gate
from automaton.runner.tick import tick
from automaton.store import deferrals
from automaton.store import loops as store
from automaton.store.layout import Project
from tests.runner.loopkit import make_loop

PY = sys.executable
OK = {"type": "result", "subtype": "success", "is_error": False, "result": "done", "total_cost_usd": 0.1,
      "usage": {}}


def limit_result(text: str, cost: float = 0.05, **over: Any) -> dict[str, Any]:
    return {"type": "result", "subtype": "success", "is_error": True, "result": text, "total_cost_usd": cost,
            "usage": {}, **over}


def claude_says(fake_bin: Any, by_role: dict[str, dict[str, Any]], write: str | None = None) -> None:
    """A fake `claude` answering per AUTOMATON_ROLE; `write`: a file it changes in its worktree first."""
    fake_bin("claude", f"""
        sys.stdin.read()
        answers = {json.dumps(by_role)!r}
        role = os.environ.get("AUTOMATON_ROLE", "implement")
        if {write!r} and role == "implement":
            os.makedirs("src", exist_ok=True)
            open({write!r}, "a").write("work\\n")
        doc = json.loads(answers).get(role) or {json.dumps(OK)!r}
        print(doc if isinstance(doc, str) else json.dumps(doc))
        sys.exit(1 if json.loads(doc if isinstance(doc, str) else json.dumps(doc)).get("is_error") else 0)
        """)


def claude_loop(root: Path, name: str = "demo", **over: Any) -> Project:
    verify = {"roles": {"implement": {"prompt": "implement.md"},
                        "verify": {"command": [PY, "-c", "print('1 passed, 1 failed')"], "score": "summary"},
                        "orchestrate": {"builtin": True}}}
    # sandbox off: the fake claude writes its argv log outside the worktree
    return make_loop(root, name, harness={"name": "claude", "args": []}, sandbox="off", **{**verify, **over})


def lines(project: Project, name: str = "demo") -> list[str]:
    return (project.loop_dir(store.require_tracked(project, name)) / ".state.log").read_text().splitlines()


def test_a_usage_limit_defers_without_counting_the_iteration(project: Path, fake_bin: Any, tmp_path: Path) -> None:
    reset = int(time.time()) + 3 * 3600
    claude_says(fake_bin, {"implement": limit_result(f"Claude AI usage limit reached|{reset}")})
    sent = tmp_path / "notified.jsonl"
    notify = {"command": [PY, "-c", f"import sys; open({str(sent)!r}, 'a').write(sys.stdin.read() + '\\n')"]}
    proj = claude_loop(project, notify=notify)
    from tests.commands.loopkit import human_seal

    human_seal(proj)  # a notify block runs only once a human sealed loop.json
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None
    until = deferrals.iso(reset + deferrals.RESET_MARGIN_S)
    assert out.data["deferred"]["until"] == until and out.data["deferred"]["source"] == "reported"
    assert out.data["iteration_counted"] is False and out.data["verdict"] is None
    s = store.read_state(proj, "demo")  # the ledger accepts the give-back (no StateTampered)
    assert (s.iteration_count, s.spent_usd, s.status) == (0, 0.05, "running")
    assert s.score_history == () and s.last_verdict is None
    last = lines(proj)[-1]
    assert " TICK_DEFERRED n=1 refund_usd=0.95 cost=0.05 " in last and " iterations=0 spent_usd=0.05 " in last
    assert f"until={until}" in last and "commit=" not in last  # nothing changed: nothing committed
    runs = proj.loop_dir(store.require_tracked(proj, "demo")) / "runs"
    kept = [p.name for p in runs.iterdir()]
    assert len(kept) == 1 and kept[0].startswith("1.deferred-")  # runs/1 is free for the next tick
    assert json.loads((runs / kept[0] / "deferred.json").read_text())["harness"] == "claude"
    account = json.loads((Path.home() / ".config/automaton/deferrals/claude.json").read_text())
    assert account["until_iso"] == until and account["loop"] == "demo" and account["streak"] == 1
    events = [json.loads(line) for line in sent.read_text().splitlines() if line.strip()]
    assert [(e["event"], e["until"], e["harness"]) for e in events] == [("deferred", until, "claude")]

    gate = tick(proj, "demo")  # the next fire: refused, no halt, nothing run, no second notification
    assert gate.code == 1 and gate.data is not None and gate.data["reason"] == f"deferred:{until}"
    assert store.read_state(proj, "demo").status == "running"
    assert any(line.startswith("  next step: none: the first tick after") for line in gate.lines)
    assert lines(proj)[-1].split(" ")[1] == "TICK_DEFERRED"
    assert len([line for line in sent.read_text().splitlines() if line.strip()]) == 1
    status = loop_status(proj, "demo")
    assert any(line.startswith(f"  deferred until {until}: claude usage limit") for line in status.lines)


def test_every_loop_on_the_same_harness_waits_and_others_run(project: Path, fake_bin: Any, tmp_path: Path) -> None:
    from tests.helpers import init_repo

    claude_says(fake_bin, {"implement": limit_result("5-hour limit reached ∙ resets 3pm")})
    first = claude_loop(project)
    other = claude_loop(init_repo(tmp_path / "other-project"), "other")  # another project, same user
    scripted = make_loop(project, "local", script={"implement": []})
    assert tick(first, "demo").code == 0
    refused = check_gate(other, "other")
    assert refused.code == 1 and refused.data is not None and refused.data["reason"].startswith("deferred:")
    assert refused.data["harness"] == "claude" and refused.data["halted_now"] is False
    assert check_gate(scripted, "local").code == 0  # another harness's account is not deferred


def test_no_reset_time_backs_off_and_doubles(project: Path, fake_bin: Any) -> None:
    text = 'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"rate limit"}}'
    claude_says(fake_bin, {"implement": limit_result(text, cost=0.0, api_error_status=429)})
    proj = claude_loop(project)
    before = time.time()
    out = tick(proj, "demo")
    assert out.data is not None and out.data["deferred"]["source"] == "backoff"
    first = deferrals.read("claude")
    assert first is not None and before + 900 <= first.until <= time.time() + 901
    # the deferral ended (time passed) and the next tick hits the limit again: 30 minutes
    path = deferrals.path("claude")
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "until": time.time() - 1}))
    assert tick(proj, "demo").code == 0
    second = deferrals.read("claude")
    assert second is not None and second.streak == 2 and second.until - second.set_at == 1800
    s = store.read_state(proj, "demo")
    assert (s.iteration_count, s.spent_usd) == (0, 0.0)


def test_a_tick_without_a_limit_clears_the_deferral(project: Path, fake_bin: Any) -> None:
    claude_says(fake_bin, {})
    proj = claude_loop(project)
    deferrals.record("claude", None, "earlier limit", "demo", now=time.time() - 3 * 3600)  # ended an hour ago
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["iteration"] == 1
    assert deferrals.read("claude") is None  # the streak starts over
    assert store.read_state(proj, "demo").iteration_count == 1


@pytest.mark.parametrize("write", [None, "src/b.py"])
def test_a_limit_of_the_verify_agent_defers_the_account(project: Path, fake_bin: Any, write: str | None) -> None:
    """Without changes the tick is put off; with a commit it is an ordinary counted tick (both
    costs as reported) and the account still waits."""
    claude_says(fake_bin, {"verify": limit_result("You've hit your limit · resets 4pm (Europe/Berlin)", cost=0.02)},
                write=write)
    roles = {"implement": {"prompt": "implement.md"}, "verify": {"prompt": "verify.md", "score": "agent"},
             "orchestrate": {"builtin": True}}
    proj = claude_loop(project, roles=roles, template_files={"verify.md": "Check.\n"})
    out = tick(proj, "demo")
    assert out.data is not None and (out.data.get("deferred") is None) == (write is not None)
    assert bool(out.data["commit"]) == (write is not None)
    s = store.read_state(proj, "demo")
    assert (s.iteration_count, s.spent_usd) == (int(write is not None), 0.12)  # implement 0.10 + verify 0.02
    found = deferrals.read("claude")
    assert found is not None and found.active()


RED_TEAM_LIMIT = {"type": "result", "subtype": "success", "is_error": True,
                  "result": "Claude AI usage limit reached|1796610000", "num_turns": 1,
                  "usage": {"input_tokens": 0, "output_tokens": 0}}


@pytest.mark.parametrize("reset", [1796610000, 1000000000])  # in the future, in the past
def test_a_limit_printed_after_edits_is_a_counted_tick_never_free(project: Path, fake_bin: Any, reset: int) -> None:
    """Red team: an agent that edits its worktree and then prints a usage-limit result (no cost,
    no output tokens: "refused") was put off at $0, its iteration given back, its edits committed
    unverified; with a reset time in the past it repeated every 30 minutes. A tick that changed
    the worktree is an ordinary tick: counted, verified, its unknown cost at max_tick_usd."""
    doc = {**RED_TEAM_LIMIT, "result": f"Claude AI usage limit reached|{reset}"}
    claude_says(fake_bin, {"implement": doc}, write="src/a.py")
    proj = claude_loop(project)
    for n in (1, 2):
        out = tick(proj, "demo")
        assert out.code == 0 and out.data is not None and out.data.get("deferred") is None, out.lines
        assert out.data["iteration"] == n and out.data["verdict"] is not None  # verified: 1 passed, 1 failed
        assert (out.data["cost_usd"], out.data["cost_known"]) == (1.0, False)  # max_tick_usd
        deferrals.path("claude").unlink()  # the account waits; the next fire is let through here
    s = store.read_state(proj, "demo")
    assert (s.iteration_count, s.spent_usd) == (2, 2.0)
    assert not any(" TICK_DEFERRED " in line for line in lines(proj))


def test_an_unreadable_deferral_file_holds_the_gate_for_a_bounded_time(project: Path, fake_bin: Any) -> None:
    claude_says(fake_bin, {})
    proj = claude_loop(project)
    path = deferrals.path("claude")
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    refused = check_gate(proj, "demo")
    assert refused.code == 1 and refused.data is not None and refused.data["reason"].startswith("deferred:")
    assert "remove it to retry sooner" in " ".join(refused.lines)
    old = time.time() - deferrals.MAX_BACKOFF_S - 60
    os.utime(path, (old, old))
    assert check_gate(proj, "demo").code == 0  # fail closed, but never for ever


@pytest.mark.parametrize(("streak", "minutes"), [(1, 15), (2, 30), (3, 60), (5, 240), (6, 360), (40, 360)])
def test_backoff_doubles_up_to_six_hours(streak: int, minutes: int) -> None:
    assert deferrals.backoff_s(streak) == minutes * 60


def test_reported_times_are_bounded() -> None:
    now = 1_750_000_000.0
    past = deferrals.record("codex", now - 10, "stale message", None, now=now)  # a past reset: backoff
    assert (past.source, past.until) == ("backoff", now + 900)
    far = deferrals.record("codex", now + 365 * 86400, "a year", None, now=now)
    assert far.until == now + deferrals.MAX_DEFER_S and far.streak == 2
    deferrals.clear("codex", started_at=now - 1)  # a tick that began before the deferral: kept
    assert deferrals.read("codex", now) is not None
    deferrals.clear("codex", started_at=now + 1)
    assert deferrals.read("codex", now) is None


def test_a_limited_tick_that_halts_after_its_commit_counts_and_still_defers_the_account(
        project: Path, fake_bin: Any) -> None:
    claude_says(fake_bin, {"implement": limit_result("Claude AI usage limit reached|4102444800")},
                write="README.md")  # out of file_scope: the check after the commit halts the loop
    proj = claude_loop(project)
    out = tick(proj, "demo")
    assert out.data is not None and str(out.data["halt"]).startswith("drift_detected")
    s = store.read_state(proj, "demo")
    assert (s.status, s.iteration_count) == ("halted", 1)  # an ordinary, counted tick
    assert any(" TICK n=1 " in line for line in lines(proj))
    assert not any(" TICK_DEFERRED " in line for line in lines(proj))
    found = deferrals.read("claude")
    assert found is not None and found.active()  # the other loops on this account still wait


def test_a_deferred_tick_records_the_agent_version(project: Path, fake_bin: Any) -> None:
    """tick.json of a deferred tick says which CLI version reported the limit, read from the
    npm package.json beside the executable (as a ran tick's does)."""
    claude_says(fake_bin, {"implement": limit_result(f"Claude AI usage limit reached|{int(time.time()) + 3600}")})
    (fake_bin.dir / "package.json").write_text(json.dumps({"name": "@anthropic-ai/claude-code",
                                                           "version": "2.1.332"}))
    proj = claude_loop(project)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data["deferred"]["source"] == "reported"
    assert out.data["agent_version"] == "2.1.332"
    kept = json.loads((Path(out.data["run_dir"]) / "tick.json").read_text())
    assert kept["agent_version"] == "2.1.332"


def test_a_codex_429_storm_charges_nothing_and_never_halts(project: Path, fake_bin: Any) -> None:
    """Issue 24: Codex's `exceeded retry limit, last status: 429` before any model work (the
    recorded codex-cli 0.171.0 output) is the provider's refusal. Each such tick was charged
    max_tick_usd as unknown cost, and six of them halted the loop budget_exhausted with $0
    really spent; now each is charged $0 and the loop keeps running."""
    recorded = Path(__file__).parents[1] / "e2e" / "recorded" / "codex-0.171.0" / "rate-limit-429.jsonl"
    fake_bin("codex", f"sys.stdin.read()\nsys.stdout.write({recorded.read_text()!r})\nsys.exit(1)\n")
    proj = make_loop(project, harness={"name": "codex", "args": [], "model": "gpt-5"}, sandbox="off",
                     brakes={"max_budget_usd": 5.0, "max_tick_usd": 1.0},
                     roles={"implement": {"prompt": "implement.md"},
                            "verify": {"command": [PY, "-c", "print('1 passed')"], "score": "summary"},
                            "orchestrate": {"builtin": True}})
    for _ in range(6):
        out = tick(proj, "demo")
        assert out.code == 0 and out.data is not None and out.data["deferred"] is not None, out.lines
        assert (out.data["cost_usd"], out.data["cost_known"]) == (0.0, True)
        deferrals.path("codex").unlink()  # the backoff ended: the next tick may start
    s = store.read_state(proj, "demo")
    assert (s.spent_usd, s.iteration_count, s.status) == (0.0, 0, "running")
    assert check_gate(proj, "demo").code == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/fd reopens a pipe on Linux only")
@pytest.mark.parametrize("forged", ["claude-success", "claude-limit"])
def test_a_result_forged_into_claudes_stdout_charges_the_cap_and_defers_nothing(
        project: Path, fake_bin: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forged: str) -> None:
    """Issue 24, through a whole tick: a tool of the agent writes a Claude result into the CLI's
    stdout through /proc/<pid>/fd/1 and stops the CLI, which exits 0. Measured on the old
    runner: the tick charged $0.0001, or was taken as a usage limit ($0, the iteration given
    back, every Claude loop deferred). Now the line never gets in: unknown cost, at the cap."""
    from tests.harnesses.test_cli import CLAUDE_LIMIT, CLAUDE_SUCCESS, forging_cli

    monkeypatch.setenv("FORGE_DONE", str(tmp_path / "forge-done"))
    fake_bin("claude", forging_cli(CLAUDE_SUCCESS if forged == "claude-success" else CLAUDE_LIMIT))
    proj = claude_loop(project)
    out = tick(proj, "demo")
    assert out.code == 0 and out.data is not None and out.data.get("deferred") is None, out.lines
    assert (out.data["cost_usd"], out.data["cost_known"]) == (1.0, False)  # max_tick_usd
    s = store.read_state(proj, "demo")
    assert (s.iteration_count, s.spent_usd) == (1, 1.0)
    assert not deferrals.path("claude").exists()
