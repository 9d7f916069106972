"""Notifications: loop.json `notify` validation, a command on PATH, a webhook on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from automaton import notify
from automaton.core.errors import BadInput
from automaton.core.loopconfig import NOTIFY_EVENTS, parse_config
from automaton.core.names import LoopName
from automaton.store import loops
from automaton.store.layout import Project
from tests.commands.loopkit import human_seal, log_lines, loop_with
from tests.core.test_loopconfig import DEFAULTS, cfg
from tests.helpers import Result, bring_task, patched, run_cli, via_json

# A notifier that records its stdin and its AUTOMATON_EVENT / AUTOMATON_MESSAGE, one JSON line a call.
RECORDER = """\
seen = {"stdin": sys.stdin.read(), "event": os.environ.get("AUTOMATON_EVENT"),
        "message": os.environ.get("AUTOMATON_MESSAGE")}
with open(os.path.join(os.path.dirname(sys.argv[0]), "notified.jsonl"), "a") as fh:
    fh.write(json.dumps(seen) + "\\n")
sys.exit(int(os.environ.get("NOTIFIER_EXIT", "0")))
"""


def received(bin_dir: Path) -> list[dict[str, Any]]:
    path = bin_dir / "notified.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{**row, "body": json.loads(row["stdin"])} for row in rows]


def approved_loop(root: Path, **top: Any) -> Project:
    """`loop_with`, then sealed by a human: its notify block may be used."""
    p = loop_with(root, **top)
    human_seal(p)
    return p


def gate(p: Project, name: str = "demo") -> Result:
    return run_cli("--check-gate", name, "--project", str(p.root), "--json")


def exhaust(p: Project, name: str = "demo") -> None:
    loops.update_state(p, name, via_json("TICK", {}, lambda s: s.update(iteration_count=25)))


@pytest.fixture
def notifier(fake_bin: Callable[[str, str], Path]) -> Path:
    fake_bin("notifier", RECORDER)
    return fake_bin.dir  # type: ignore[attr-defined, no-any-return]


class _Hook(BaseHTTPRequestHandler):
    got: ClassVar[list[dict[str, Any]]] = []
    status: ClassVar[int] = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).got.append({"path": self.path, "type": self.headers["Content-Type"], "body": json.loads(body)})
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, type[_Hook]]]:
    """A webhook receiver on 127.0.0.1 (an ephemeral port) in a thread; proxies switched off."""
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    handler = type("Hook", (_Hook,), {"got": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook/s3cret-topic", handler
    finally:
        server.shutdown()
        server.server_close()


# ---- loop.json `notify` -----------------------------------------------------------------------

def test_notify_block_is_parsed_with_all_events_by_default() -> None:
    c = parse_config(cfg(notify={"command": ["notify-send", "x"], "webhook": None}), "loop.json", DEFAULTS)
    assert c.notify is not None and c.notify.command == ["notify-send", "x"] and c.notify.webhook is None
    assert c.notify.events == NOTIFY_EVENTS
    c = parse_config(cfg(notify={"webhook": "https://ntfy.sh/t", "events": ["halt", "halt", "complete"]}),
                     "loop.json", DEFAULTS)
    assert c.notify is not None and c.notify.events == ("halt", "complete")
    assert parse_config(cfg(notify=None), "loop.json", DEFAULTS).notify is None
    assert parse_config(cfg(), "loop.json", DEFAULTS).notify is None


@pytest.mark.parametrize(("block", "said"), [
    ({"command": ["x"], "channel": "y"}, "unknown key 'notify.channel'"),
    ({"command": []}, "notify.command must be a non-empty argv"),
    ({"command": "notify-send"}, "notify.command must be a list"),
    ({"webhook": "ftp://example.com/x"}, "notify.webhook must be an http:// or https:// URL"),
    ({"webhook": "file:///etc/passwd"}, "notify.webhook must be an http"),
    ({"webhook": "https:///no-host"}, "notify.webhook must be an http"),
    ({"webhook": "https://example.com/a b"}, "notify.webhook must be an http"),
    ({"command": None, "webhook": None}, "notify needs a command or a webhook"),
    ({"command": ["x"], "events": ["halted"]}, "notify.events must be a non-empty list of"),
    ({"command": ["x"], "events": []}, "notify.events must be a non-empty list"),
    ("notify-send", "notify must be a JSON object"),
])
def test_bad_notify_blocks_are_refused_naming_the_key(block: object, said: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_config(cfg(notify=block), "loop.json", DEFAULTS)
    assert said in err.value.message and "loop.json" in err.value.message


# ---- the command ------------------------------------------------------------------------------

def test_a_new_halt_runs_the_command_once_with_the_json_on_stdin(project: Path, notifier: Path) -> None:
    p = approved_loop(project, notify={"command": ["notifier", "--flag"]})
    exhaust(p)
    first = gate(p)
    assert first.code == 1 and first.json["halted_now"] is True, first.err
    assert gate(p).code == 1  # blocked again, but that is no new halt
    calls = received(notifier)
    assert len(calls) == 1
    body = calls[0]["body"]
    assert calls[0]["event"] == "halt" and body["event"] == "halt"
    assert (body["loop"], body["status"], body["halt_reason"]) == ("demo", "halted", "iterations_exhausted")
    assert body["project"] == str(p.root) and body["next_step"] == "automaton --approve --loop demo"
    assert calls[0]["message"] == body["message"] == "automaton: loop demo halted (iterations_exhausted: 25 of 25" \
                                                     " iterations used)"
    assert not any("notify_failed" in line for line in log_lines(p))


def test_a_failing_command_is_logged_and_never_stops_the_halt(project: Path, notifier: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    p = approved_loop(project, notify={"command": ["notifier"]})
    monkeypatch.setenv("NOTIFIER_EXIT", "3")
    exhaust(p)
    r = gate(p)
    assert r.code == 1 and r.json["halted_now"] is True
    assert "automaton: warning: notify command notifier failed (exit 3)" in r.err
    warning = [line for line in log_lines(p) if " WARNING " in line]
    assert len(warning) == 1 and "reason=notify_failed" in warning[0] and "event=halt" in warning[0]
    assert loops.inspect(p, "demo").tamper == ""  # the WARNING line is a chained, keyed line
    assert loops.read_state(p, "demo").status == "halted"


def test_a_missing_or_hanging_command_fails_within_the_timeout(project: Path, fake_bin: Callable[[str, str], Path],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    p = approved_loop(project, notify={"command": ["no-such-notifier-xyz"]})
    failed = notify.notify(p, "demo", "halt", {"event": "halt"})
    assert failed is not None and failed.startswith("notify command no-such-notifier-xyz failed (exit 127)")
    fake_bin("sleeper", "import time\ntime.sleep(30)\n")
    (p.loop_dir(LoopName("demo")) / loops.SEALED_COPY).unlink()
    config = p.loop_dir(LoopName("demo")) / "loop.json"
    config.write_text(config.read_text().replace("no-such-notifier-xyz", "sleeper"))
    human_seal(p)  # loop.json itself is the sealed one now (no copy kept)
    (p.loop_dir(LoopName("demo")) / loops.SEALED_COPY).unlink()
    monkeypatch.setattr(notify, "TIMEOUT_S", 0.5)
    start = time.monotonic()
    failed = notify.notify(p, "demo", "halt", {"event": "halt"})
    assert time.monotonic() - start < 10
    assert failed is not None and "exit 124" in failed and "timed out" in failed


def test_events_not_listed_are_not_sent(project: Path, notifier: Path) -> None:
    p = approved_loop(project, notify={"command": ["notifier"], "events": ["complete"]})
    exhaust(p)
    assert gate(p).json["halted_now"] is True
    assert received(notifier) == []
    state = loops.read_state(p, "demo")
    assert notify.notify_completion(p, "demo", patched(state, status="complete", halt_reason=None)) is None
    [call] = received(notifier)
    assert call["event"] == "complete" and call["body"]["status"] == "complete"


def test_halt_now_notifies(project: Path, notifier: Path) -> None:
    from automaton.commands.halts import halt_now
    from automaton.store.loops import Loop

    p = approved_loop(project, notify={"command": ["notifier"]})
    halt_now(Loop.resolve(p, "demo"), "drift_detected", "src/x.py out of scope", "drift_after_commit")
    [call] = received(notifier)
    assert call["body"]["halt_reason"] == "drift_detected" and call["body"]["gate"] == "drift_after_commit"
    halt_now(Loop.resolve(p, "demo"), "drift_detected", "again", "drift_after_commit")  # no longer running
    assert len(received(notifier)) == 1


def test_a_broken_loop_json_still_notifies_from_the_sealed_copy(project: Path, notifier: Path) -> None:
    p = approved_loop(project, notify={"command": ["notifier"]})
    (p.loop_dir(LoopName("demo")) / "loop.json").write_text("{ not json")
    r = gate(p)
    assert r.code == 2 and r.json["halted_now"] is True
    [call] = received(notifier)
    assert call["body"]["halt_detail"].startswith("config_changed")


def test_waiting_for_a_task_sign_off_notifies_once_per_phase(project: Path, notifier: Path) -> None:
    bring_task(project, "fix-ci", "research:awaiting_approval", focus=False)
    p = approved_loop(project, task="fix-ci", notify={"command": ["notifier"]})
    for _ in range(3):  # every scheduled fire refuses the same way
        r = gate(p)
        assert r.code == 1 and r.json["reason"] == "waiting:approval"
    [call] = received(notifier)
    assert call["event"] == "needs_approval"
    assert (call["body"]["task"], call["body"]["task_phase"]) == ("fix-ci", "research:awaiting_approval")
    assert call["body"]["next_step"] == "automaton --approve --task fix-ci"


def test_a_passing_gate_makes_the_same_cause_news_again(project: Path, notifier: Path) -> None:
    p = approved_loop(project, notify={"command": ["notifier"]})
    assert notify.notify(p, "demo", "deferred", {"event": "deferred"}, once="budget_unknown") is None
    assert notify.notify(p, "demo", "deferred", {"event": "deferred"}, once="budget_unknown") is None
    assert len(received(notifier)) == 1
    assert gate(p).code == 0  # the gate passes: forget what was sent
    assert notify.notify(p, "demo", "deferred", {"event": "deferred"}, once="budget_unknown") is None
    assert len(received(notifier)) == 2


def test_no_notify_block_sends_nothing_and_says_nothing(project: Path) -> None:
    p = loop_with(project)
    exhaust(p)
    r = gate(p)
    assert r.code == 1 and "notify" not in r.err
    assert notify.notify(p, "demo", "halt", {}) is None


# ---- the webhook ------------------------------------------------------------------------------

def test_a_halt_posts_the_json_to_the_webhook(project: Path, webhook: tuple[str, type[_Hook]]) -> None:
    url, hook = webhook
    p = approved_loop(project, notify={"webhook": url, "events": ["halt"]})
    exhaust(p)
    assert gate(p).json["halted_now"] is True
    [got] = hook.got
    assert got["path"] == "/hook/s3cret-topic" and got["type"] == "application/json"
    assert got["body"]["event"] == "halt" and got["body"]["halt_reason"] == "iterations_exhausted"


def test_a_webhook_error_is_one_line_without_the_secret_path(project: Path,
                                                             webhook: tuple[str, type[_Hook]]) -> None:
    url, hook = webhook
    hook.status = 500
    p = approved_loop(project, notify={"webhook": url})
    failed = notify.notify(p, "demo", "halt", {"event": "halt"})
    assert failed == "notify webhook http://127.0.0.1 answered HTTP 500"
    closed = url.rsplit(":", 1)[0] + ":1/hook/s3cret-topic"  # nothing listens on port 1
    config = p.loop_dir(LoopName("demo")) / "loop.json"
    (p.loop_dir(LoopName("demo")) / loops.SEALED_COPY).unlink()
    config.write_text(config.read_text().replace(url, closed))
    human_seal(p)
    failed = notify.notify(p, "demo", "halt", {"event": "halt"})
    assert failed is not None and failed.startswith("notify webhook http://127.0.0.1 failed:")
    assert "s3cret" not in failed and "\n" not in failed


def test_command_and_webhook_both_run(project: Path, notifier: Path, webhook: tuple[str, type[_Hook]]) -> None:
    url, hook = webhook
    p = approved_loop(project, notify={"command": ["notifier"], "webhook": url})
    state = loops.read_state(p, "demo")
    assert notify.notify_completion(p, "demo", patched(state, status="complete",
                                                       last_verdict={"score": 1.0})) is None
    assert len(received(notifier)) == 1 and len(hook.got) == 1
    assert hook.got[0]["body"]["message"] == "automaton: loop demo is complete (score 1.00)"


def test_a_tick_put_off_without_a_halt_notifies_deferred_once(project: Path, notifier: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import automaton.vram

    def broken(**_: object) -> dict[str, object]:
        raise OSError("nvidia-smi not found")

    monkeypatch.setattr(automaton.vram, "probe", broken)
    p = approved_loop(project, harness={"local": True}, brakes={"max_budget_usd": None},
                  notify={"command": ["notifier"], "events": ["deferred"]})
    for _ in range(2):
        r = gate(p)
        assert r.code == 1 and r.json["reason"] == "budget_unknown" and r.json["halted_now"] is False
    [call] = received(notifier)
    assert call["event"] == "deferred" and call["body"]["reason"] == "budget_unknown"
    assert "nvidia-smi not found" in call["body"]["detail"]
    assert loops.read_state(p, "demo").status == "running"


# ---- only a loop.json a human sealed notifies -------------------------------------------------

def test_a_loop_json_no_human_approved_runs_no_command_and_posts_nothing(
        project: Path, notifier: Path, webhook: tuple[str, type[_Hook]]) -> None:
    """A notify block no human approved never runs: the loop starts halted for its first
    approval, and notify itself refuses the unapproved settings."""
    url, hook = webhook
    p = loop_with(project, first_approval=False, notify={"command": ["notifier"], "webhook": url})
    state = loops.read_state(p, "demo")
    assert state.status == "halted" and str(state.halt_detail).startswith("first_approval")
    r = gate(p)
    assert r.code == 1 and r.json["halted_now"] is False
    failed = notify.notify(p, "demo", "halt", {"event": "halt"})
    assert failed is not None and failed.startswith(notify.NOT_APPROVED)
    assert "never approved by a human" in failed
    assert received(notifier) == [] and hook.got == []


def test_a_human_approval_lets_the_notify_block_run(project: Path, notifier: Path, approver: str) -> None:
    p = loop_with(project, first_approval=False, notify={"command": ["notifier"]})
    assert notify.notify(p, "demo", "halt", {"event": "halt"}) is not None and received(notifier) == []
    res = run_cli("--approve", "--loop", "demo", "--yes", "--project", str(p.root))
    assert res.code == 0, res.err
    exhaust(p)
    assert gate(p).json["halted_now"] is True
    assert [c["event"] for c in received(notifier)] == ["halt"]


def test_a_changed_loop_json_or_sealed_copy_never_names_the_command(project: Path, notifier: Path,
                                                                     fake_bin: Callable[[str, str], Path]) -> None:
    """Only the bytes that hash to the seal count: neither loop.json rewritten after the seal
    nor a rewritten `sealed/loop.json` can swap the command."""
    fake_bin("evil", "open(os.path.join(os.path.dirname(sys.argv[0]), 'evil-ran'), 'w').write('x')\n")
    p = approved_loop(project, notify={"command": ["notifier"]})
    folder = p.loop_dir(LoopName("demo"))
    sealed = folder / loops.SEALED_COPY
    sealed.write_text(sealed.read_text().replace('"notifier"', '"evil"'))
    assert notify.notify(p, "demo", "halt", {"event": "halt"}) is None  # loop.json still hashes to the seal
    config = folder / "loop.json"
    config.write_text(config.read_text().replace('"notifier"', '"evil"'))
    assert notify.notify(p, "demo", "halt", {"event": "halt"}) is None  # nothing sealed is left to read
    assert not (notifier / "evil-ran").exists()
    assert [c["event"] for c in received(notifier)] == ["halt"]
