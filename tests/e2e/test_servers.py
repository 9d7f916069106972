"""The scripted servers on their own (no CLI): they run in `make test`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.e2e.install import pinned
from tests.e2e.servers.anthropic import AnthropicServer
from tests.e2e.servers.base import load_script

TOOLS = [{"name": "Write", "input_schema": {"type": "object"}}]


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url + "/v1/messages?beta=true", json.dumps(body).encode(),
                                 {"content-type": "application/json", "x-api-key": "k"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def events(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


def test_streams_a_tool_use_then_text_and_records_every_request(tmp_path: Path) -> None:
    steps = [{"tool_use": {"name": "Write", "input": {"file_path": "/x", "content": "y"}}}, {"text": "fin"}]
    log = tmp_path / "requests.jsonl"
    with AnthropicServer(steps, log) as server:
        status, headers, raw = post(server.url, {"model": "m", "stream": True, "tools": TOOLS, "messages": []})
        assert status == 200 and headers["content-type"] == "text/event-stream"
        kinds = [e["type"] for e in events(raw)]
        assert kinds == ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                         "message_delta", "message_stop"]
        delta = events(raw)[2]["delta"]
        assert delta["type"] == "input_json_delta" and json.loads(delta["partial_json"])["file_path"] == "/x"
        assert events(raw)[4]["delta"]["stop_reason"] == "tool_use"
        status, _, raw = post(server.url, {"model": "m", "stream": False, "tools": TOOLS, "messages": []})
        doc = json.loads(raw)
        assert doc["content"] == [{"type": "text", "text": "fin"}] and doc["stop_reason"] == "end_turn"
        # A side request without tools does not consume a step.
        post(server.url, {"model": "m", "stream": False, "messages": []})
        assert server.consumed == 2
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["step"] is not None for line in lines] == [True, True, False]
    assert lines[0]["headers"]["x-api-key"] == "k" and lines[0]["body"]["tools"] == TOOLS


def test_error_steps_have_the_api_shapes() -> None:
    steps = load_script(Path(__file__).parent / "fixtures" / "anthropic-errors.script.json")
    with AnthropicServer(steps) as server:
        got = [post(server.url, {"model": "m", "tools": TOOLS, "messages": []}) for _ in steps]
    bodies = [json.loads(raw) for _, _, raw in got]
    assert [s for s, _, _ in got] == [429, 529, 429, 400, 400]
    assert [b["error"]["type"] for b in bodies] == ["rate_limit_error", "overloaded_error", "rate_limit_error",
                                                   "invalid_request_error", "invalid_request_error"]
    assert all(b["type"] == "error" for b in bodies)
    assert got[0][1]["retry-after"] == "7"
    assert got[2][1]["anthropic-ratelimit-unified-reset"] == "1790000000"
    assert "regain access on 2026-09-21 at" in bodies[3]["error"]["message"]


def test_fixture_scripts_load_and_the_lock_pins_every_cli() -> None:
    for path in (Path(__file__).parent / "fixtures").glob("*.script.json"):
        assert load_script(path)
    assert set(pinned()) >= {"claude", "codex", "gemini", "opencode"}
    assert all(c.version.count(".") == 2 for c in pinned().values())


def test_the_readmes_tested_with_table_is_generated_from_the_lock_file() -> None:
    """README.md's "Tested with" table is `python -m tests.e2e.tested_with`, character for
    character: a version or a covers line changed in one and not the other fails here."""
    from tests.e2e.install import REPO
    from tests.e2e.tested_with import table

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Tested with"):]
    section = section[:section.index("\n### ", 1)]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert "\n".join(rows) == table(), "README.md's Tested with table: regenerate it (python -m tests.e2e.tested_with)"


def user(text: str) -> dict[str, Any]:
    return {"model": "m", "tools": TOOLS, "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}


def test_lanes_keep_a_subagents_turns_apart_and_repeat_steps_stay() -> None:
    main = [{"text": "main 1"}, {"error": "overloaded", "repeat": True}]
    with AnthropicServer(main, lanes={"sub": [{"text": "sub 1"}]}) as server:
        got = [post(server.url, user(t)) for t in ("go", "[lane:sub] help", "go", "[lane:sub] help", "go")]
    texts = [json.loads(raw).get("content", [{}])[0].get("text") for _, _, raw in got]
    assert texts[:2] == ["main 1", "sub 1"]
    assert [s for s, _, _ in got][2:] == [529, 200, 529]  # the repeated error stays; an exhausted lane ends
    assert texts[3] == "Done."


def post_to(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_the_responses_server_streams_a_function_call_and_repeats_a_refusal() -> None:
    from tests.e2e.servers.openai_responses import ResponsesServer, rate_limited

    steps = [{"calls": [{"name": "exec_command", "arguments": {"cmd": "ls"}}]}, {**rate_limited(), "repeat": True}]
    with ResponsesServer(steps) as server:
        status, raw = post_to(server.url + "/v1/responses", {"model": "gpt-5", "stream": True, "input": []})
        sent = events(raw)
        assert status == 200 and sent[0]["type"] == "response.created" and sent[-1]["type"] == "response.completed"
        assert json.loads(sent[-1]["response"]["output"][0]["arguments"]) == {"cmd": "ls"}
        for _ in range(2):  # a refusal marked repeat answers every later call
            status, raw = post_to(server.url + "/v1/responses", {"model": "gpt-5", "input": []})
            assert status == 429 and json.loads(raw)["error"]["code"] == "rate_limit_exceeded"
        assert post_to(server.url + "/v1/models", {})[0] == 404  # a side request consumes nothing
    assert server.used["main"] == 1 and len(list(server.scripted_requests())) == 3


def test_the_gemini_server_streams_a_function_call_and_answers_helper_calls_aside() -> None:
    from tests.e2e.servers.gemini import GeminiServer

    with GeminiServer([{"calls": [{"name": "write_file", "args": {"file_path": "a"}}]}]) as server:
        status, raw = post_to(server.url + "/v1beta/models/gemini-2.5-pro:generateContent", {"contents": []})
        assert status == 200 and json.loads(json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"])
        status, raw = post_to(server.url + "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
                              {"contents": []})
        chunk = events(raw)[-1]
        assert status == 200 and chunk["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] == "write_file"
        assert chunk["usageMetadata"]["totalTokenCount"] > 0
        _, raw = post_to(server.url + "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", {"contents": []})
        assert events(raw)[-1]["candidates"][0]["content"]["parts"] == [{"text": "Done."}]  # past the script
    assert server.consumed == 2


def test_the_chat_server_streams_tool_calls_and_ends_with_done() -> None:
    from tests.e2e.servers.openai_chat import TITLE, ChatServer

    tools = [{"type": "function", "function": {"name": "bash"}}]
    with ChatServer([{"calls": [{"name": "bash", "arguments": {"command": "ls"}}]}]) as server:
        _, raw = post_to(server.url + "/v1/chat/completions", {"model": "m", "messages": []})  # a title: aside
        assert TITLE in raw.decode() and server.consumed == 0
        status, raw = post_to(server.url + "/v1/chat/completions", {"model": "m", "messages": [], "tools": tools})
        assert status == 200 and raw.decode().rstrip().endswith("data: [DONE]")
        chunks = [json.loads(line[6:]) for line in raw.decode().splitlines()
                  if line.startswith("data: {")]
        finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
        assert finish[-1] == "tool_calls" and chunks[-1]["usage"]["total_tokens"] > 0
        called = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks
                  if c["choices"] and "tool_calls" in c["choices"][0]["delta"]]
        assert called[0]["function"]["name"] == "bash"
    assert server.consumed == 1
