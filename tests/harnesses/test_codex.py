"""codex adapter against a fake `codex exec --json` event stream."""

from __future__ import annotations

import json
from collections.abc import Callable
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
                                         "output_tokens": 1590}},
)


def test_agent_message_usage_and_price_table(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake_codex(fake_bin, "codex banner line\n" + GOOD)
    res = get("codex").run(make_req(model="gpt-5"))
    assert res.error is None and res.exit_status == 0
    assert res.final_text == "All tests pass now."
    assert res.tokens == {"input_tokens": 26549, "cached_input_tokens": 22272, "output_tokens": 1590}
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
