"""`harnesses._cli.run_cli`: what a run that did not end by itself may report.

Any process of the agent can append lines to its CLI's stdout (`/proc/<pid>/fd/1` reopens the
runner's pipe, tests/test_proc.py), then kill the CLI or stop it until the timeout, so that
the appended line is the last one: a cost or a usage limit read from such a run is the agent's
word, and never the whole spend anyway."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from automaton.harnesses import HarnessRequest, get

KILL_SELF = "sys.stdout.flush()\nimport signal\nos.kill(os.getpid(), signal.SIGKILL)\n"


def test_a_cost_printed_before_a_signal_killed_the_cli_is_unknown(
        fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    forged = json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done",
                         "total_cost_usd": 0.0001, "usage": {}})
    fake_bin("claude", f"sys.stdin.read()\nprint({forged!r})\n{KILL_SELF}")
    res = get("claude").run(make_req())
    assert res.exit_status < 0 and not res.timed_out
    assert res.cost_usd is None  # the tick counts max_tick_usd, never the appended $0.0001


def test_a_usage_limit_printed_before_a_signal_killed_the_cli_defers_nothing(
        fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    message = "You've hit your usage limit. Try again at 12:16 PM."
    lines = [{"type": "thread.started", "thread_id": "t"}, {"type": "error", "message": message},
             {"type": "turn.failed", "error": {"message": message}}]
    text = "".join(json.dumps(e) + "\n" for e in lines)
    fake_bin("codex", f"sys.stdin.read()\nsys.stdout.write({text!r})\n{KILL_SELF}")
    res = get("codex").run(make_req(model="gpt-5"))
    assert res.exit_status < 0 and res.usage_limit is None and res.error is not None
    # control: the same output from a codex that exits by itself is a usage limit
    fake_bin("codex", f"sys.stdin.read()\nsys.stdout.write({text!r})\nsys.exit(1)\n")
    assert get("codex").run(make_req(model="gpt-5")).usage_limit is not None


def test_the_tokens_of_a_run_stopped_at_its_timeout_are_no_cost(
        fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    done = {"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 10}}
    fake_bin("codex", f"import time\nsys.stdin.read()\nprint({json.dumps(done)!r}, flush=True)\ntime.sleep(30)\n")
    res = get("codex").run(make_req(model="gpt-5", timeout_s=1))
    assert res.timed_out and res.cost_usd is None  # what it printed is a part of its spend at most
    fake_bin("codex", f"sys.stdin.read()\nprint({json.dumps(done)!r})\n")
    assert get("codex").run(make_req(model="gpt-5")).cost_usd is not None  # control: a finished run's cost
