"""codex adapter against a fake `codex exec --json` event stream."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.harnesses import HarnessRequest, codex, get
from tests.helpers import calls


def jsonl(*events: dict[str, Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


def fake_codex(fake_bin: Any, stdout: str, code: int = 0) -> None:
    fake_bin("codex", f"""
        open(os.path.join(os.path.dirname(sys.argv[0]), "codex.stdin"), "w").write(sys.stdin.read())
        sys.stdout.write({stdout!r})
        sys.exit({code})
        """)


GOOD = jsonl(
    {"type": "thread.started", "thread_id": "t-1"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "i0", "type": "reasoning", "text": "thinking"}},
    {"type": "item.completed", "item": {"id": "i1", "type": "agent_message", "text": "All tests pass now."}},
    {"type": "turn.completed", "usage": {"input_tokens": 26549, "cached_input_tokens": 22272,
                                         "cache_write_input_tokens": 0, "output_tokens": 1590,
                                         "reasoning_output_tokens": 0}},
)


def test_agent_message_usage_and_price_table(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake_codex(fake_bin, "codex banner line\n" + GOOD)
    res = get("codex").run(make_req(model="gpt-5"))
    assert res.error is None and res.exit_status == 0
    assert res.final_text == "All tests pass now."
    assert res.tokens == {"input_tokens": 26549, "cached_input_tokens": 22272, "cache_write_input_tokens": 0,
                          "output_tokens": 1590, "reasoning_output_tokens": 0}
    expected = ((26549 - 22272) * 1.25 + 22272 * 0.125 + 1590 * 10.0) / 1e6
    assert res.cost_usd == pytest.approx(expected)
    argv = calls(fake_bin.dir, "codex")[0]
    assert argv[:2] == ["exec", "--json"] and argv[-1] == "-"
    assert (fake_bin.dir / "codex.stdin").read_text() == "fix the tests"


def test_unknown_model_gives_unknown_cost(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake_codex(fake_bin, GOOD)
    assert get("codex").run(make_req(model=None)).cost_usd is None
    assert get("codex").run(make_req(model="some-future-model")).cost_usd is None


def test_turn_failed_with_exit_zero_is_a_failure(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake_codex(fake_bin, jsonl({"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
                               {"type": "turn.failed", "error": {"message": "stream disconnected"}}))
    res = get("codex").run(make_req())
    assert res.exit_status == 0
    assert res.error == "codex turn failed: stream disconnected"
    assert res.cost_usd is None


def test_usage_sums_over_turns() -> None:
    out = jsonl({"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 1}},
                {"type": "turn.completed", "usage": {"input_tokens": 5, "cached_input_tokens": 0, "output_tokens": 2}})
    assert codex.parse_for(None)(out, "", 0).tokens == {"input_tokens": 15, "cached_input_tokens": 0,
                                                        "output_tokens": 3}


def test_codex_sandbox_mode_follows_automatons_sandbox(make_req: Callable[..., HarnessRequest], tmp_path: Any) -> None:
    from automaton.core.sandbox import Policy

    confined = make_req(sandbox=Policy((tmp_path,), tmpdir=None, label="t"))
    # Codex's own bubblewrap sandbox cannot mount inside automaton's: inside it, commands run
    # unsandboxed by Codex and confined by the kernel; outside it Codex's workspace-write holds.
    assert codex.invocation(confined).argv[3:5] == ["--sandbox", "danger-full-access"]
    assert codex.invocation(make_req()).argv[3:5] == ["--sandbox", "workspace-write"]
    mine = make_req(sandbox=Policy((tmp_path,), tmpdir=None, label="t"), args=("-s", "read-only"))
    assert "danger-full-access" not in codex.invocation(mine).argv


def test_a_retry_notice_that_the_turn_got_past_is_no_error() -> None:
    # codex-cli 0.171.0: a 401 or 429 it retried past prints an `error` event, then the turn completes.
    out = jsonl({"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
                {"type": "error", "message": "Reconnecting... 1/5 (unexpected status 401 Unauthorized: try again)"},
                {"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 1}})
    res = codex.parse_for("gpt-5")(out, "", 0)
    assert res.error is None and res.usage_limit is None
    failed = jsonl({"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
                   {"type": "error", "message": "stream disconnected"},
                   {"type": "turn.failed", "error": {"message": "stream disconnected"}})
    assert codex.parse_for("gpt-5")(failed, "", 1).error == "codex turn failed: stream disconnected"


def test_a_second_turn_event_makes_the_cost_unknown() -> None:
    """One exec runs one turn (every recorded real run prints one `turn.completed` or
    `turn.failed`): a second one was written by another process holding Codex's stdout, e.g. a
    cheap `turn.completed` after a failed turn whose spend Codex never reported."""
    failed = jsonl({"type": "turn.started"}, {"type": "turn.failed", "error": {"message": "stream disconnected"}})
    cheap = jsonl({"type": "turn.completed", "usage": {"input_tokens": 1, "cached_input_tokens": 0,
                                                       "output_tokens": 1}})
    for out in (failed + cheap, cheap + cheap):
        res = codex.parse_for("gpt-5")(out, "", 0)
        assert res.cost_usd is None and res.usage_limit is None
        assert res.error == "codex's output holds 2 turn events, one exec runs one turn: its cost is unknown"
    assert codex.parse_for("gpt-5")(cheap, "", 0).cost_usd is not None  # control: one turn is priced
    recorded = sorted(RECORDED.glob("*.jsonl"))
    assert recorded
    for path in recorded:
        events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        assert sum(e.get("type") in codex.FINAL_EVENTS for e in events) == 1, path.name


def test_negative_counts_and_costs_lower_no_sum() -> None:
    out = jsonl({"type": "turn.completed", "usage": {"input_tokens": 1000, "cached_input_tokens": 0,
                                                     "output_tokens": -1_000_000}})
    assert codex.parse_for(None)(out, "", 0).tokens["output_tokens"] == 0


def test_a_retried_401_in_a_run_that_worked_is_not_unavailable(fake_bin: Any,
                                                               make_req: Callable[..., HarnessRequest]) -> None:
    fake_codex(fake_bin, jsonl({"type": "thread.started", "thread_id": "t"},
                               {"type": "error", "message": "Reconnecting... 1/5 (unexpected status 401 Unauthorized)"},
                               {"type": "item.completed", "item": {"type": "agent_message", "text": "done"}},
                               {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 1}}))
    res = get("codex").run(make_req(model="gpt-5"))
    assert res.unavailable is None and res.error is None and res.cost_usd is not None



# What the real codex-cli printed against the scripted server (tests/e2e/test_codex.py writes
# these with AUTOMATON_E2E_RECORD=1).
RECORDED = Path(__file__).resolve().parents[1] / "e2e" / "recorded" / "codex-0.171.0"


def shapes(stdout: str) -> dict[tuple[str, str | None], set[str]]:
    """(event type, item type) -> the keys of the event, its item and its usage, as seen."""
    out: dict[tuple[str, str | None], set[str]] = {}
    for line in stdout.splitlines():
        ev = json.loads(line)
        item = ev.get("item") if isinstance(ev.get("item"), dict) else {}
        keys = set(ev) | {f"item.{k}" for k in item} | {f"usage.{k}" for k in ev.get("usage") or {}}
        out.setdefault((ev["type"], item.get("type")), set()).update(keys)
    return out


def test_the_fake_stream_has_the_shapes_of_a_recorded_real_run() -> None:
    real = shapes((RECORDED / "exec-tick.jsonl").read_text())
    fake = shapes(GOOD)
    fake.pop(("item.completed", "reasoning"))  # the scripted model sends no reasoning items
    for kind, keys in fake.items():
        assert kind in real, kind
        assert keys - {"item.id"} <= real[kind], (kind, keys - real[kind])
        assert {k for k in real[kind] if k.startswith("usage.")} <= keys, kind  # no usage field left out


def test_recorded_runs_parse_as_the_adapter_says() -> None:
    parse = codex.parse_for("gpt-5")
    ok = parse((RECORDED / "exec-tick.jsonl").read_text(), "", 0)
    assert ok.error is None and ok.final_text == "Done: src/app.py written."
    assert ok.cost_usd == pytest.approx(((2400 - 400) * 1.25 + 400 * 0.125 + 600 * 10.0) / 1e6)
    limit = parse((RECORDED / "usage-limit.jsonl").read_text(), "", 1).usage_limit
    assert limit is not None and limit.reset_epoch is not None and "usage limit" in limit.message
    storm = parse((RECORDED / "rate-limit-429.jsonl").read_text(), "", 1).usage_limit
    assert storm is not None and storm.reset_epoch is None and "429 Too Many Requests" in storm.message
    retried = parse((RECORDED / "retried-429.jsonl").read_text(), "", 0)
    assert retried.error is None and retried.usage_limit is None and retried.final_text == "Done."


def test_a_recorded_start_failure_is_unavailable(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    stderr = (RECORDED / "cannot-start.stderr").read_text()
    fake_bin("codex", f"sys.stdin.read()\nsys.stderr.write({stderr!r})\nsys.exit(1)")
    res = get("codex").run(make_req())
    assert res.unavailable is not None and "failed to initialize in-process app-server client" in res.unavailable


def test_a_refusal_before_any_model_work_costs_nothing() -> None:
    """Issue 24: the recorded 429 storm and usage limit show no item but Codex's own `error`
    notice and no completed turn: the provider refused, Codex reports no cost, so $0 (never
    unknown, which would be counted at max_tick_usd). A limit after a command ran is unknown."""
    parse = codex.parse_for("gpt-5")
    for name in ("rate-limit-429.jsonl", "usage-limit.jsonl"):
        res = parse((RECORDED / name).read_text(), "", 1)
        assert res.usage_limit is not None and res.cost_usd == 0.0, name
    worked = jsonl({"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
                   {"type": "item.completed", "item": {"id": "i", "type": "command_execution", "exit_code": 0}},
                   {"type": "turn.failed", "error": {"message": "You've hit your usage limit. Try again at 5:02 AM."}})
    after = parse(worked, "", 1)
    assert after.usage_limit is not None and after.cost_usd is None  # model work: unknown, at the cap
    assert not codex.worked([]) and codex.worked([{"type": "turn.completed", "usage": {}}])
