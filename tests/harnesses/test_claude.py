"""claude adapter against a fake `claude` printing Claude Code's real result shapes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from automaton.harnesses import HarnessRequest, claude, get
from tests.helpers import calls

RESULT = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1200, "num_turns": 3,
          "result": "Fixed the failing test.", "session_id": "abc", "total_cost_usd": 0.0731,
          "usage": {"input_tokens": 1200, "output_tokens": 340, "cache_creation_input_tokens": 10,
                    "cache_read_input_tokens": 900}}


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


def test_array_output_uses_the_last_result_element(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    early = dict(RESULT, result="stale", total_cost_usd=9.0)
    messages = [{"type": "system", "subtype": "init"}, early,
                {"type": "assistant", "message": {"content": []}}, dict(RESULT, result="final answer"),
                {"type": "user", "message": {}}]
    fake_claude(fake_bin, json.dumps(messages))
    res = get("claude").run(make_req())
    assert res.final_text == "final answer"
    assert res.cost_usd == 0.0731


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
