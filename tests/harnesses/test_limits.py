"""Usage limits: each adapter against a fake CLI printing the shapes the real ones print when the
account's usage or rate limit refuses the work, and the reset times read from them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from automaton.harnesses import HarnessRequest, get
from automaton.harnesses._limits import duration_s, reset_epoch

NOW = 1_750_000_000.0  # 2025-06-15T15:06:40Z


def fake(fake_bin: Any, name: str, stdout: str, code: int = 0, stderr: str = "") -> None:
    fake_bin(name, f"""
        sys.stdin.read() if not sys.stdin.isatty() else None
        sys.stdout.write({stdout!r})
        sys.stderr.write({stderr!r})
        sys.exit({code})
        """)


def claude_result(text: str, **over: Any) -> str:
    doc = {"type": "result", "subtype": "success", "is_error": True, "result": text, "total_cost_usd": 0,
           "usage": {}, **over}
    return json.dumps(doc)


# ---- Claude Code ------------------------------------------------------------------------------

def test_claude_legacy_usage_limit_with_epoch(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake(fake_bin, "claude", claude_result("Claude AI usage limit reached|1755615600"), code=1)
    res = get("claude").run(make_req())
    assert res.usage_limit is not None and res.usage_limit.reset_epoch == 1755615600.0
    assert "usage limit reached" in res.usage_limit.message
    assert res.unavailable is None and res.error is not None  # a limit is not "cannot run here"


def test_claude_five_hour_limit_with_zone(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake(fake_bin, "claude", claude_result("You've hit your limit · resets 4pm (Asia/Kuala_Lumpur)"), code=1)
    before = time.time()
    res = get("claude").run(make_req())
    assert res.usage_limit is not None and res.usage_limit.reset_epoch is not None
    at = datetime.fromtimestamp(res.usage_limit.reset_epoch, ZoneInfo("Asia/Kuala_Lumpur"))
    assert (at.hour, at.minute) == (16, 0)
    assert before < res.usage_limit.reset_epoch <= before + 86400  # the next 4pm there


def test_claude_api_429_without_a_time_is_a_limit_with_no_reset(fake_bin: Any,
                                                                make_req: Callable[..., HarnessRequest]) -> None:
    text = ('API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"This request would'
            ' exceed your account\'s rate limit. Please try again later."}}')
    fake(fake_bin, "claude", claude_result(text, api_error_status=429), code=1)
    res = get("claude").run(make_req())
    assert res.usage_limit is not None and res.usage_limit.reset_epoch is None  # the runner backs off


def test_claude_rejected_rate_limit_event_gives_its_reset(fake_bin: Any,
                                                          make_req: Callable[..., HarnessRequest]) -> None:
    messages = [{"type": "system", "subtype": "init"},
                {"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "resetsAt": 1774447200,
                                                                 "rateLimitType": "five_hour"}},
                json.loads(claude_result("5-hour limit reached"))]
    fake(fake_bin, "claude", json.dumps(messages), code=1)
    res = get("claude").run(make_req())
    assert res.usage_limit is not None and res.usage_limit.reset_epoch == 1774447200.0


def test_claude_success_mentioning_a_limit_is_not_a_limit(fake_bin: Any,
                                                          make_req: Callable[..., HarnessRequest]) -> None:
    # The agent's own final text may talk about anything: only a failed result counts.
    fake(fake_bin, "claude", claude_result("I documented the usage limit reached|1755615600 case", is_error=False))
    res = get("claude").run(make_req())
    assert res.error is None and res.usage_limit is None


def test_claude_other_errors_are_not_limits(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake(fake_bin, "claude", claude_result("", subtype="error_max_budget_usd"))
    assert get("claude").run(make_req()).usage_limit is None


# ---- Codex ------------------------------------------------------------------------------------

def codex_failed(message: str) -> str:
    events = [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
              {"type": "error", "message": message}, {"type": "turn.failed", "error": {"message": message}}]
    return "".join(json.dumps(e) + "\n" for e in events)


def test_codex_usage_limit_try_again_in(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake(fake_bin, "codex", codex_failed("You've hit your usage limit. Upgrade to Pro"
                                         " (https://openai.com/chatgpt/pricing) or try again in 2 days 17 hours"
                                         " 14 minutes."), code=1)
    before = time.time()
    res = get("codex").run(make_req())
    assert res.usage_limit is not None and res.usage_limit.reset_epoch is not None
    expected = 2 * 86400 + 17 * 3600 + 14 * 60
    assert before + expected - 1 <= res.usage_limit.reset_epoch <= time.time() + expected + 1


def test_codex_usage_limit_try_again_at_a_clock_time(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake(fake_bin, "codex", codex_failed("You've hit your usage limit. To get more access now, send a request to"
                                         " your admin or try again at 12:16 PM."))  # exit 0: turn.failed decides
    res = get("codex").run(make_req())
    assert res.usage_limit is not None and res.usage_limit.reset_epoch is not None
    local = datetime.fromtimestamp(res.usage_limit.reset_epoch).astimezone()
    assert (local.hour, local.minute) == (12, 16)


def test_codex_retry_errors_of_a_successful_turn_are_not_limits(fake_bin: Any,
                                                                make_req: Callable[..., HarnessRequest]) -> None:
    events = [{"type": "error", "message": "stream error: 429 Too Many Requests; retrying 1/5 in 204ms"},
              {"type": "item.completed", "item": {"type": "agent_message", "text": "done"}},
              {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}]
    fake(fake_bin, "codex", "".join(json.dumps(e) + "\n" for e in events))
    assert get("codex").run(make_req()).usage_limit is None


def test_codex_tool_output_never_counts(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    events = [{"type": "item.completed", "item": {"type": "command_execution", "command": "cat notes",
                                                  "aggregated_output": "You've hit your usage limit.",
                                                  "exit_code": 0, "status": "completed"}},
              {"type": "turn.failed", "error": {"message": "stream disconnected before completion"}}]
    fake(fake_bin, "codex", "".join(json.dumps(e) + "\n" for e in events), code=1)
    res = get("codex").run(make_req())
    assert res.error is not None and res.usage_limit is None


# ---- Gemini CLI -------------------------------------------------------------------------------

def test_gemini_terminal_quota_with_reset_after(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    body = {"response": "", "error": {"type": "TerminalQuotaError", "code": 429,
                                      "message": "You have exhausted your capacity on this model. Your quota will"
                                                 " reset after 2h52m39s."}}
    fake(fake_bin, "gemini", json.dumps(body), code=1)
    before = time.time()
    res = get("gemini").run(make_req())
    assert res.usage_limit is not None and res.usage_limit.reset_epoch is not None
    assert before + 10359 - 1 <= res.usage_limit.reset_epoch <= time.time() + 10359 + 1


def test_gemini_resource_exhausted_on_stderr(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    stderr = ('[API Error: {"error":{"message":"{\\n  \\"error\\": {\\n    \\"code\\": 429,\\n    \\"message\\":'
              ' \\"Quota exceeded for quota metric \'Gemini 2.5 Pro Requests\'\\",\\n    \\"status\\":'
              ' \\"RESOURCE_EXHAUSTED\\"\\n  }\\n}\\n","code":429,"status":"Too Many Requests"}}]\n')
    fake(fake_bin, "gemini", "", code=1, stderr=stderr)
    res = get("gemini").run(make_req())
    assert res.usage_limit is not None and res.usage_limit.reset_epoch is None


def test_gemini_plain_error_is_not_a_limit(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake(fake_bin, "gemini", json.dumps({"response": "", "error": {"message": "bad input", "code": 42}}), code=42)
    assert get("gemini").run(make_req()).usage_limit is None


# ---- the reset times, on their own ------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("Claude AI usage limit reached|1755615600", 1755615600.0),
    ('{"type":"usage_limit_reached","resets_at":1777936568,"resets_in_seconds":13872}', 1777936568.0),
    ("You will regain access on 2026-04-01 at 00:00 UTC.", datetime(2026, 4, 1, tzinfo=UTC).timestamp()),
    ('{"type":"usage_limit_reached","resets_in_seconds":13872}', NOW + 13872),
    ("or try again in 5 days 22 hours 11 minutes.", NOW + 5 * 86400 + 22 * 3600 + 11 * 60),
    ("Please retry in 38.5s", NOW + 38.5),
    ("Suggested retry after 34s.", NOW + 34),
    ("Go usage limit reached. It will reset in 2 hours 5 minutes.", NOW + 2 * 3600 + 5 * 60),  # opencode 1.18.33
    ("try again at Jul 5th, 2026 8:19 PM.", None),  # checked below in the machine's zone
    ("resets 4pm (Mars/Olympus)", None),  # a zone this machine does not know: no time, never a wrong one
    ("resets 3 in the afternoon", None),
    ("Quota exceeded for quota metric", None),
])
def test_reset_epoch_forms(text: str, expected: float | None) -> None:
    got = reset_epoch(text, NOW)
    if "Jul 5th" in text:
        assert got is not None
        local = datetime.fromtimestamp(got).astimezone()
        assert (local.year, local.month, local.day, local.hour, local.minute) == (2026, 7, 5, 20, 19)
        return
    assert got == expected


def test_a_clock_time_already_past_today_is_tomorrow() -> None:
    got = reset_epoch("5-hour limit reached ∙ resets 3pm (UTC)", NOW)  # 15:06:40 UTC now
    assert got == datetime(2025, 6, 16, 15, 0, tzinfo=UTC).timestamp()
    got = reset_epoch("resets Apr 23 at 4pm (America/Recife)", NOW)  # April is past: next year's
    assert got == datetime(2026, 4, 23, 16, 0, tzinfo=ZoneInfo("America/Recife")).timestamp()


def test_durations() -> None:
    assert duration_s("2h52m39s") == 10359
    assert duration_s("900ms") == 0.9
    assert duration_s("1 hour 30 mins") == 5400
    assert duration_s("soon") is None


def test_claude_killed_mid_stream_never_reads_the_agents_messages(fake_bin: Any,
                                                                 make_req: Callable[..., HarnessRequest]) -> None:
    work = [{"type": "assistant", "message": {"content": [{"type": "text", "text": "Claude AI usage limit"
                                                                                   " reached|1755615600"}]}}]
    fake(fake_bin, "claude", "\n".join(json.dumps(m) for m in work) + "\n", code=143)
    res = get("claude").run(make_req())
    assert res.error is not None and res.usage_limit is None
    fake(fake_bin, "claude", "Claude AI usage limit reached|1755615600\n", code=1)  # the CLI's own plain text
    assert get("claude").run(make_req()).usage_limit is not None


def test_codex_a_limit_that_a_later_completed_turn_contradicts_is_no_limit(
        fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    # A codex exec runs one turn, which ends in `turn.completed` or `turn.failed`. Two turn events
    # mean one was written by another process holding the CLI's stdout: no limit is read from
    # either, and the cost is unknown (counted at max_tick_usd).
    forged = codex_failed("You've hit your usage limit. Try again at 12:16 PM.")
    done = [{"type": "item.completed", "item": {"type": "agent_message", "text": "done"}},
            {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}}]
    fake(fake_bin, "codex", forged + "".join(json.dumps(e) + "\n" for e in done))
    res = get("codex").run(make_req(model="gpt-5"))
    assert res.usage_limit is None and res.cost_usd is None and res.final_text == "done"
    assert res.error == "codex's output holds 2 turn events, one exec runs one turn: its cost is unknown"


def test_gemini_quota_is_quoted_from_its_error_object_however_long_the_stack_before_it(
        fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    # gemini-cli 0.61.0 on stderr (recorded in tests/e2e): its own line, a long error dump whose
    # `message` is the API's generic one, then its JSON error object saying which quota ran out.
    dump = "  details: [\n" + "    { '@type': 'type.googleapis.com/google.rpc.Help', links: [] },\n" * 40
    error = json.dumps({"session_id": "s", "error": {"type": "Error", "code": 429,
                                                     "message": "You have exhausted your daily quota on this model."}},
                       indent=2)
    stderr = ("TerminalQuotaError: You have exhausted your daily quota on this model.\n" + dump
              + "  message: 'You exceeded your current quota, please check your plan and billing details.',\n}\n"
              + error + "\n")
    fake(fake_bin, "gemini", "", code=1, stderr=stderr)
    res = get("gemini").run(make_req())
    assert res.usage_limit is not None and "exhausted your daily quota" in res.usage_limit.message
