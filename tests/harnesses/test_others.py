"""gemini, aider, opencode and command adapters against fakes printing the real shapes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from automaton.core.errors import BadInput
from automaton.harnesses import HarnessRequest, get
from tests.helpers import calls

# `roles` (per-role tokens inside a model's entry, already counted in its `tokens`), `tools` and
# `files` as gemini-cli 0.61.0 prints them (tests/e2e/recorded/gemini-0.61.0/tick.json).
GEMINI = {"session_id": "s", "response": "Done: tests fixed.",
          "stats": {"models": {"gemini-2.5-pro": {"api": {"totalRequests": 2},
                                                  "tokens": {"input": 100, "prompt": 120, "candidates": 30,
                                                             "total": 150, "cached": 20, "thoughts": 5, "tool": 0},
                                                  "roles": {"main": {"totalRequests": 1, "tokens": {
                                                      "input": 100, "prompt": 120, "candidates": 30, "total": 150,
                                                      "cached": 20, "thoughts": 5, "tool": 0}}}},
                               "gemini-2.5-flash": {"tokens": {"input": 10, "candidates": 3, "total": 13}}},
                    "tools": {"totalCalls": 0}, "files": {"totalLinesAdded": 0}}}


def test_gemini_response_and_tokens(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake_bin("gemini", f"sys.stdout.write({json.dumps(GEMINI)!r})")
    res = get("gemini").run(make_req(model="gemini-2.5-pro"))
    assert res.final_text == "Done: tests fixed." and res.error is None
    assert res.cost_usd is None  # Gemini prints no cost
    assert res.tokens["input"] == 110 and res.tokens["total"] == 163
    argv = calls(fake_bin.dir, "gemini")[0]
    assert argv[:3] == ["-o", "json", "--skip-trust"] and argv[-2:] == ["-p", "fix the tests"]


@pytest.mark.parametrize(("code", "meaning"), [(42, "input error"), (53, "turn limit exceeded")])
def test_gemini_exit_codes(fake_bin: Any, make_req: Callable[..., HarnessRequest], code: int, meaning: str) -> None:
    body = json.dumps({"response": "", "error": {"message": "bad"}})
    fake_bin("gemini", f"sys.stdout.write({body!r}); sys.exit({code})")
    res = get("gemini").run(make_req())
    assert res.exit_status == code
    assert res.error is not None and meaning in res.error and "bad" in res.error


def test_aider_cost_from_analytics_log(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake_bin("aider", """
        log = sys.argv[sys.argv.index("--analytics-log") + 1]
        with open(log, "a") as fh:
            fh.write(json.dumps({"event": "launched", "properties": {}}) + "\\n")
            for cost, total in ((0.01, 0.01), (0.02, 0.03)):
                fh.write(json.dumps({"event": "message_send", "properties": {
                    "prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                    "cost": cost, "total_cost": total}, "user_id": "u", "time": 1}) + "\\n")
        print("Tokens: 200 sent, 40 received. Cost: $0.02 message, $0.03 session.")
        """)
    req = make_req()
    res = get("aider").run(req)
    assert res.cost_usd == pytest.approx(0.03)
    assert res.tokens == {"prompt_tokens": 200, "completion_tokens": 40, "total_tokens": 240}
    argv = calls(fake_bin.dir, "aider")[0]
    assert argv[:4] == ["--message", "fix the tests", "--yes-always", "--no-auto-commits"]
    assert "Cost: $0.02 message" in res.final_text


def test_aider_without_log_has_unknown_cost(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    fake_bin("aider", "print('ok')")
    assert get("aider").run(make_req()).cost_usd is None


def test_opencode_sums_step_finish_costs(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    events = [
        {"type": "step_start", "timestamp": 1, "sessionID": "s", "part": {"type": "step-start"}},
        {"type": "text", "timestamp": 2, "sessionID": "s", "part": {"type": "text", "text": "Working"}},
        {"type": "step_finish", "timestamp": 3, "sessionID": "s", "part": {
            "type": "step-finish", "cost": 0.012, "tokens": {"total": 167, "input": 100, "output": 10, "reasoning": 2,
                                                            "cache": {"read": 50, "write": 5}}}},
        {"type": "text", "timestamp": 4, "sessionID": "s", "part": {"type": "text", "text": "All green."}},
        {"type": "step_finish", "timestamp": 5, "sessionID": "s", "part": {
            "type": "step-finish", "cost": 0.008, "tokens": {"total": 24, "input": 20, "output": 4, "reasoning": 0,
                                                            "cache": {"read": 0, "write": 0}}}},
    ]
    out = "".join(json.dumps(e) + "\n" for e in events)
    fake_bin("opencode", f"sys.stdout.write({out!r})")
    res = get("opencode").run(make_req(model="anthropic/claude-sonnet-4"))
    assert res.cost_usd == pytest.approx(0.02)
    assert res.final_text == "All green."
    assert res.tokens == {"total": 191, "input": 120, "output": 14, "reasoning": 2, "cache_read": 50,
                          "cache_write": 5}
    argv = calls(fake_bin.dir, "opencode")[0]
    assert argv[:3] == ["run", "--format", "json"] and argv[-1] == "fix the tests"


def opencode_api_error(message: str, status: int, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """An `error` event as opencode 1.18.33 prints one (tests/e2e/recorded/opencode-1.18.33/out-of-credits.jsonl)."""
    body = json.dumps({"error": {"code": status, "message": message}})
    return {"type": "error", "timestamp": 1, "sessionID": "ses_1", "error": {"name": "APIError", "data": {
        "message": message, "statusCode": status, "isRetryable": False,
        "responseHeaders": {"content-type": "application/json", **(headers or {})}, "responseBody": body,
        "metadata": {"url": "http://127.0.0.1:1/v1/chat/completions"}}}}


def test_opencode_error_event(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    ev = opencode_api_error("This model's maximum context length is 8192 tokens", 400)
    fake_bin("opencode", f"sys.stdout.write({json.dumps(ev)!r} + '\\n'); sys.exit(1)")
    res = get("opencode").run(make_req())
    assert res.error == "opencode error: This model's maximum context length is 8192 tokens"
    assert res.cost_usd is None and res.usage_limit is None and res.unavailable is None


def test_an_opencode_limit_event_defers_and_reads_its_retry_after(fake_bin: Any,
                                                                  make_req: Callable[..., HarnessRequest]) -> None:
    ev = opencode_api_error("Rate limit reached for requests", 429, {"retry-after": "120"})
    fake_bin("opencode", f"sys.stdout.write({json.dumps(ev)!r} + '\\n'); sys.exit(1)")
    before = time.time()
    res = get("opencode").run(make_req())
    assert res.usage_limit is not None and res.unavailable is None
    assert res.usage_limit.reset_epoch is not None and before + 115 <= res.usage_limit.reset_epoch <= time.time() + 125
    assert res.cost_usd == 0.0  # refused before any step: nothing spent


@pytest.mark.parametrize(("message", "status", "headers", "reset"), [
    ("Upstream said no", 429, {}, None),  # a 429 whatever its message
    ("Upstream said no", 402, {"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, 1792567680.0),
    ("You exceeded your current quota, please check your plan and billing details.", 400, {}, None),
    ("Go usage limit reached. It will reset in 2 hours 5 minutes.", 400, {}, 1000.0 + 7500),
])
def test_opencode_limit_forms(message: str, status: int, headers: dict[str, str], reset: float | None,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    from automaton.harnesses import opencode

    monkeypatch.setattr(time, "time", lambda: 1000.0)
    res = opencode.parse(json.dumps(opencode_api_error(message, status, headers)), "", 1)
    assert res.usage_limit is not None and res.usage_limit.reset_epoch == reset, res.usage_limit


def test_an_opencode_limit_after_model_work_charges_the_steps_it_reported() -> None:
    from automaton.harnesses import opencode

    step = {"type": "step_finish", "part": {"type": "step-finish", "cost": 0.25, "tokens": {"input": 10}}}
    out = "\n".join(json.dumps(e) for e in (step, opencode_api_error("Rate limit reached", 429)))
    res = opencode.parse(out, "", 1)
    assert res.usage_limit is not None and res.cost_usd == 0.25
    assert opencode.parse(json.dumps(opencode_api_error("bad request", 400)), "", 1).usage_limit is None


def test_an_appended_negative_step_cost_lowers_nothing() -> None:
    """A step costs what opencode reported or nothing: another process's line with a negative
    cost (or token count) cannot lower the sum."""
    from automaton.harnesses import claude, opencode

    step = {"type": "step_finish", "part": {"type": "step-finish", "cost": 0.25, "tokens": {"input": 10}}}
    minus = {"type": "step_finish", "part": {"type": "step-finish", "cost": -0.2499, "tokens": {"input": -10}}}
    res = opencode.parse("\n".join(json.dumps(e) for e in (step, minus)), "", 0)
    assert res.cost_usd == 0.25 and res.tokens == {"input": 10}
    negative = {"type": "result", "subtype": "success", "is_error": False, "result": "", "total_cost_usd": -1.0}
    assert claude.parse(json.dumps(negative), "", 0).cost_usd is None


def test_command_gets_prompt_on_stdin_in_a_file_and_role(fake_bin: Any,
                                                         make_req: Callable[..., HarnessRequest]) -> None:
    tool = fake_bin("mytool", """
        stdin = sys.stdin.read()
        prompt_file = open(os.environ["AUTOMATON_PROMPT_FILE"]).read()
        print(json.dumps({"stdin": stdin, "file": prompt_file, "role": os.environ["AUTOMATON_ROLE"],
                          "argv": sys.argv[1:]}))
        """)
    res = get("command").run(make_req(command=(str(tool), "--fast"), args=("x",), role="verify"))
    seen = json.loads(res.final_text)
    assert seen == {"stdin": "fix the tests", "file": "fix the tests", "role": "verify", "argv": ["--fast", "x"]}
    assert res.cost_usd is None and res.error is None


def test_command_without_argv_is_bad_input(make_req: Callable[..., HarnessRequest]) -> None:
    with pytest.raises(BadInput, match=r"harness\.command"):
        get("command").run(make_req())


def test_a_tool_printing_ten_megabytes(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    tool = fake_bin("chatty", """
        line = "y" * 1023 + "\\n"
        for _ in range(10 * 1024):
            sys.stdout.write(line)
        sys.stdout.write("the end\\n")
        """)
    req = make_req(command=(str(tool),))
    res = get("command").run(req)
    assert res.exit_status == 0 and not res.timed_out
    assert res.final_text.endswith("the end")
    assert req.transcript.stat().st_size == 10 * 1024 * 1024 + len("the end\n")


def test_a_tool_that_never_exits_and_leaves_grandchildren(fake_bin: Any, tmp_path: Any,
                                                          make_req: Callable[..., HarnessRequest]) -> None:
    from tests.test_proc import all_gone

    pids = tmp_path / "pids"
    tool = fake_bin("hang", f"""
        import subprocess, time
        kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{kid.pid}}")
        print("started", flush=True)
        while True:
            time.sleep(1)
        """)
    res = get("command").run(make_req(command=(str(tool),), timeout_s=2))
    assert res.timed_out and res.error is not None and "timed out" in res.error
    assert res.duration_s < 2 + 5 + 10
    assert all_gone([int(p) for p in pids.read_text().split()])


def test_unknown_harness_name() -> None:
    with pytest.raises(BadInput, match="unknown harness 'gpt'"):
        get("gpt")


def test_gemini_in_an_untrusted_folder_is_unavailable(fake_bin: Any, make_req: Callable[..., HarnessRequest]) -> None:
    # gemini-cli 0.61.0 without --skip-trust in a new folder (recorded in tests/e2e): exit 55, stderr only
    said = ("\x1b[31mGemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, set"
            " the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in interactive"
            " mode.\x1b[0m\n")
    fake_bin("gemini", f"sys.stderr.write({said!r}); sys.exit(55)")
    res = get("gemini").run(make_req())
    assert res.error == "gemini exited 55 (folder not trusted)"
    assert res.unavailable is not None
    assert res.unavailable.startswith("gemini refused to run in a folder it does not trust")


GEMINI_RECORDED = Path(__file__).resolve().parents[1] / "e2e" / "recorded" / "gemini-0.61.0"


def test_the_gemini_fake_has_the_shape_of_a_recorded_real_run() -> None:
    real = json.loads((GEMINI_RECORDED / "tick.json").read_text())
    assert set(GEMINI) == set(real) and set(GEMINI["stats"]) == set(real["stats"])
    real_model = next(iter(real["stats"]["models"].values()))
    fake_model = GEMINI["stats"]["models"]["gemini-2.5-pro"]
    assert set(fake_model) == set(real_model) and set(fake_model["tokens"]) == set(real_model["tokens"])


def test_recorded_gemini_runs_parse_as_the_adapter_says() -> None:
    from automaton.harnesses import gemini

    text = (GEMINI_RECORDED / "tick.json").read_text()
    ok = gemini.parse(text, "", 0)
    real_model = next(iter(json.loads(text)["stats"]["models"].values()))
    assert ok.error is None and ok.final_text == "Done: src/app.py written." and ok.cost_usd is None
    assert ok.tokens == real_model["tokens"]  # the model's total, its roles not counted twice
    quota = gemini.parse("", (GEMINI_RECORDED / "quota.stderr").read_text(), 173)
    assert quota.usage_limit is not None and "exhausted your daily quota" in quota.usage_limit.message


OPENCODE_RECORDED = Path(__file__).resolve().parents[1] / "e2e" / "recorded" / "opencode-1.18.33"


def test_the_opencode_fake_has_the_shapes_of_a_recorded_real_run() -> None:
    real = [json.loads(line) for line in (OPENCODE_RECORDED / "tick.jsonl").read_text().splitlines()]
    by_type = {e["type"]: e for e in real}
    assert {"step_start", "text", "tool_use", "step_finish"} <= set(by_type)
    step = by_type["step_finish"]
    assert set(step) == {"type", "timestamp", "sessionID", "part"}
    assert {"type", "cost", "tokens"} <= set(step["part"]) and step["part"]["type"] == "step-finish"
    assert set(step["part"]["tokens"]) == {"total", "input", "output", "reasoning", "cache"}
    assert set(step["part"]["tokens"]["cache"]) == {"read", "write"}
    assert by_type["text"]["part"]["type"] == "text" and isinstance(by_type["text"]["part"]["text"], str)


def test_a_recorded_opencode_run_parses_as_the_adapter_says() -> None:
    from automaton.harnesses import opencode

    text = (OPENCODE_RECORDED / "tick.jsonl").read_text()
    steps = [json.loads(line)["part"] for line in text.splitlines() if '"step_finish"' in line]
    res = opencode.parse(text, "", 0)
    assert res.error is None and res.final_text == "Done: src/app.py written."
    assert res.cost_usd == pytest.approx(sum(p["cost"] for p in steps))
    assert res.tokens["input"] == sum(p["tokens"]["input"] for p in steps)


def test_a_command_harness_may_write_to_dev_stdout(make_req: Callable[..., HarnessRequest]) -> None:
    """The agent CLIs' output is sealed (sockets); a command's is not: its cost is always unknown,
    and bash opens /dev/stdout for `> /dev/stdout`, which a socket refuses."""
    res = get("command").run(make_req(command=("bash", "-c", "echo hi > /dev/stdout")))
    assert res.exit_status == 0 and res.final_text == "hi"


def test_recorded_opencode_limits_parse_as_the_adapter_says() -> None:
    """The real refusal opencode does not retry (402), and a run a retry got past (the 429 left
    no trace in its output)."""
    from automaton.harnesses import opencode

    refused = opencode.parse((OPENCODE_RECORDED / "out-of-credits.jsonl").read_text(), "", 1)
    assert refused.usage_limit is not None and "Insufficient credits" in refused.usage_limit.message
    assert refused.cost_usd == 0.0 and refused.error is not None
    retried = opencode.parse((OPENCODE_RECORDED / "retried-429.jsonl").read_text(), "", 0)
    assert retried.usage_limit is None and retried.error is None and retried.cost_usd is not None


def test_the_opencode_error_fake_has_the_shape_of_the_recorded_one() -> None:
    from tests.e2e.shapes import shape

    real = json.loads((OPENCODE_RECORDED / "out-of-credits.jsonl").read_text().splitlines()[0])
    fake = opencode_api_error("x", 402)
    for doc in (real, fake):  # header names vary with the server; their values are strings either way
        doc["error"]["data"]["responseHeaders"] = {"h": "v"}
    assert shape(fake) == shape(real)


def test_a_recorded_gemini_rate_limit_defers_until_the_retry_it_suggests(monkeypatch: pytest.MonkeyPatch) -> None:
    """gemini-cli 0.61.0 after its three retries of a per-minute 429 (tests/e2e): exit 173,
    stdout empty, "Suggested retry after 1s." in the error object on stderr."""
    from automaton.harnesses import gemini

    monkeypatch.setattr(time, "time", lambda: 1000.0)
    res = gemini.parse("", (GEMINI_RECORDED / "rate-limit.stderr").read_text(), 173)
    assert res.usage_limit is not None and res.usage_limit.reset_epoch == 1001.0, res.usage_limit
    assert res.cost_usd is None  # Gemini prints no cost: counted at max_tick_usd
