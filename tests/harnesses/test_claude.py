"""claude adapter against a fake `claude` printing Claude Code's real result shapes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from automaton.harnesses import HarnessRequest, claude, get
from tests.e2e.shapes import fixture, shape
from tests.helpers import calls

# The fields of Claude Code 2.1.332's `-p --output-format json` result, as recorded from the real
# CLI in tests/e2e/fixtures/claude-result.json (values made up; the test below keeps them in step).
USAGE = {"input_tokens": 1200, "output_tokens": 340, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 900,
         "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 10}, "fallback_credit": None,
         "inference_geo": "", "iterations": [], "output_tokens_details": {"thinking_tokens": 0},
         "server_tool_use": {"web_fetch_requests": 0, "web_search_requests": 0}, "service_tier": "standard",
         "speed": "standard"}
RESULT = {"type": "result", "subtype": "success", "is_error": False, "api_error_status": None, "duration_ms": 1200,
          "duration_api_ms": 900, "num_turns": 3, "result": "Fixed the failing test.", "result_index": 0,
          "session_id": "abc", "uuid": "u-1", "stop_reason": "end_turn", "terminal_reason": "completed",
          "total_cost_usd": 0.0731, "usage": USAGE,
          "modelUsage": {"claude-sonnet-4-5": {"inputTokens": 1200, "outputTokens": 340, "costUSD": 0.0731}},
          "permission_denials": [], "fast_mode_state": "off", "fast_mode_disabled_reason": "sdk_opt_in_required",
          "subagent_stats": {"spawned": 0}, "safety_stops": 0, "queued_turn_count": 0, "ttft_ms": 800,
          "ttft_stream_ms": 790, "first_content_frame_ms": 780, "time_to_request_ms": 700}


def fake_claude(fake_bin: Any, stdout: str, code: int = 0) -> None:
    fake_bin("claude", f"""
        data = sys.stdin.read()
        open(os.path.join(os.path.dirname(sys.argv[0]), "claude.stdin"), "w").write(data)
        sys.stdout.write({stdout!r})
        sys.exit({code})
        """)


def test_single_result_object(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake_claude(fake_bin, json.dumps(RESULT))
    req = make_req(max_usd=0.5, settings_path=Path("/tmp/hooks.json"), model="sonnet")
    res = get("claude").run(req)
    assert res.exit_status == 0 and res.error is None and not res.timed_out
    assert res.final_text == "Fixed the failing test."
    assert res.cost_usd == 0.0731
    assert res.tokens == {"input_tokens": 1200, "output_tokens": 340, "cache_creation_input_tokens": 10,
                          "cache_read_input_tokens": 900}
    argv = calls(fake_bin.dir, "claude")[0]
    assert argv[:3] == ["-p", "--output-format", "json"]
    assert argv[argv.index("--max-budget-usd") + 1] == "0.5000"
    assert argv[argv.index("--settings") + 1] == "/tmp/hooks.json"
    assert argv[argv.index("--model") + 1] == "sonnet"
    assert (fake_bin.dir / "claude.stdin").read_text() == "fix the tests"
    assert req.transcript.read_text() == json.dumps(RESULT)


def test_array_output_uses_its_result_element(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    messages = [{"type": "system", "subtype": "init"}, {"type": "assistant", "message": {"content": []}},
                {"type": "user", "message": {}}, dict(RESULT, result="final answer")]
    fake_claude(fake_bin, json.dumps(messages))
    res = get("claude").run(make_req())
    assert res.final_text == "final answer"
    assert res.cost_usd == 0.0731


FORGED = dict(RESULT, result="done", total_cost_usd=0.0001)


def test_a_second_result_message_makes_the_cost_unknown(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    """A real run prints one result message. A second one, wherever it stands (appended after
    the object, or as the last line or array element), was written by another process holding
    Claude's stdout: the cost is unknown (the tick counts max_tick_usd), never the forged one."""
    outputs = [json.dumps(RESULT) + "\n" + json.dumps(FORGED) + "\n",
               json.dumps(FORGED) + "\n" + json.dumps(RESULT) + "\n",
               "\n".join(json.dumps(m) for m in [{"type": "system"}, RESULT, FORGED]),
               json.dumps([{"type": "system"}, RESULT, FORGED])]
    for out in outputs:
        res = claude.parse(out, "", 0)
        assert res.cost_usd is None and res.tokens == {}, out
        assert res.error == "claude's output holds 2 result messages, a real run prints one: its cost is unknown"
    fake_claude(fake_bin, outputs[0])
    res = get("claude").run(make_req())
    assert res.cost_usd is None and res.error is not None and "2 result messages" in res.error
    fake_claude(fake_bin, json.dumps(RESULT) + "\n")
    assert get("claude").run(make_req()).cost_usd == 0.0731  # control: one result is read


def test_the_recorded_real_results_are_one_result_message_each() -> None:
    """The fakes above stay in step with the real CLI: every result recorded from it is one
    object with one `type` "result", which `parse` reads."""
    for name in ("claude-result.json", "claude-result-rate_limit.json", "claude-result-spend_limit.json"):
        real = fixture(name)
        assert real["type"] == "result"
        assert claude.parse(json.dumps(real), "", 0).cost_usd == real["total_cost_usd"]


def test_is_error_true_is_reported_even_with_exit_zero(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake_claude(fake_bin, json.dumps(dict(RESULT, subtype="error_max_budget_usd", is_error=True, result="")))
    res = get("claude").run(make_req())
    assert res.exit_status == 0
    assert res.error is not None and "error_max_budget_usd" in res.error


def test_missing_cost_is_none_not_zero(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    obj = {k: v for k, v in RESULT.items() if k != "total_cost_usd"}
    fake_claude(fake_bin, json.dumps(obj))
    res = get("claude").run(make_req())
    assert res.cost_usd is None
    assert res.error is None


def test_no_json_at_all_is_an_error(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake_claude(fake_bin, "Error: not logged in\n", code=1)
    res = get("claude").run(make_req())
    assert res.exit_status == 1 and res.cost_usd is None
    assert res.error == "Error: not logged in"


def test_stream_json_lines_take_the_last_result() -> None:
    lines = "\n".join(json.dumps(x) for x in [{"type": "system"}, RESULT])
    assert claude.parse(lines, "", 0).final_text == "Fixed the failing test."


def test_user_permission_mode_is_not_overridden(make_req: Callable[..., HarnessRequest]) -> None:
    argv = claude.invocation(make_req(args=("--permission-mode", "plan"))).argv
    assert argv.count("--permission-mode") == 1 and argv[-1] == "plan"
    assert "--max-budget-usd" not in claude.invocation(make_req()).argv


def test_the_fake_result_has_the_recorded_real_results_fields() -> None:
    """RESULT against the result object recorded from the real CLI (`make e2e` with
    AUTOMATON_E2E_RECORD=1): the same top-level fields, and `usage` of the same shape."""
    real = fixture("claude-result.json")
    assert set(RESULT) == set(real)
    assert shape(RESULT["usage"]) == shape(real["usage"])


def test_the_real_429_result_is_a_usage_limit() -> None:
    """Claude Code 2.1.332 reports a 429 as `is_error` true with subtype "success",
    `api_error_status` 429, `api_error_type` "rate_limit_error" and the text "API Error: Request
    rejected (429) · <the API's message>" (recorded: tests/e2e/fixtures/claude-result-rate_limit.json)."""
    real = fixture("claude-result-rate_limit.json")
    res = claude.parse(json.dumps(real), "", 1)
    assert res.error is not None and res.usage_limit is not None and res.usage_limit.reset_epoch is None
    assert res.cost_usd == real["total_cost_usd"]
    # The same refusal with a message that names no limit and no status: the error type alone says it.
    bare = {**real, "api_error_status": None, "result": "API Error: Request rejected · Please slow down"}
    assert claude.parse(json.dumps(bare), "", 1).usage_limit is not None


def test_the_real_spend_limit_result_defers_until_the_reset_it_names() -> None:
    real = fixture("claude-result-spend_limit.json")
    res = claude.parse(json.dumps(real), "", 1)
    assert res.usage_limit is not None and res.usage_limit.reset_epoch == 1_899_999_960


def test_a_limit_reported_without_a_cost_before_any_model_work_costs_nothing() -> None:
    """Issue 24: a usage-limit result with no `total_cost_usd`, no output tokens and one turn is
    the provider's refusal: $0. With output tokens (or an assistant message, or more turns) the
    model worked: unknown, counted at max_tick_usd. A cost Claude reported is always taken."""
    refused = {"type": "result", "subtype": "success", "is_error": True, "num_turns": 1,
               "result": "Claude AI usage limit reached|1999999999", "usage": {"input_tokens": 0, "output_tokens": 0}}
    res = claude.parse(json.dumps(refused), "", 1)
    assert res.usage_limit is not None and res.cost_usd == 0.0
    worked = {**refused, "usage": {"input_tokens": 900, "output_tokens": 40}}
    assert claude.parse(json.dumps(worked), "", 1).cost_usd is None
    assert claude.parse(json.dumps({**refused, "num_turns": 4}), "", 1).cost_usd is None
    streamed = "\n".join(json.dumps(m) for m in ({"type": "assistant", "message": {}}, refused))
    assert claude.parse(streamed, "", 1).cost_usd is None
    assert claude.parse(json.dumps({**refused, "total_cost_usd": 0.02}), "", 1).cost_usd == 0.02
    assert claude.parse("", "Claude AI usage limit reached|1999999999", 1).cost_usd == 0.0  # plain text only
    real = fixture("claude-result-rate_limit.json")  # recorded: it reports what the call cost
    assert claude.parse(json.dumps(real), "", 1).cost_usd == real["total_cost_usd"]
