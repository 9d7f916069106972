"""Tell a human what a loop needs: loop.json `notify` runs a command and/or POSTs to a webhook.

Events (core.loopconfig.NOTIFY_EVENTS): `halt` (a new halt; the loop waits for
`--approve --loop`), `needs_approval` (the gate waits for a human sign-off of the loop's task),
`deferred` (a tick put off without halting: unknown budget, untracked or tampered task, or
the agent account's usage limit until a time), `complete` (the loop reached its goal). The
body is one JSON object (see `payload`).

Sending never raises and never holds a lock: each channel gets `TIMEOUT_S` seconds, and a
failure comes back as one line for the caller to log (`WARNING reason=notify_failed`). The
settings come only from the loop.json a human sealed: the bytes (the kept copy
`sealed/loop.json`, else loop.json itself) that hash to the seal in the loop's keyed state
(`config_sha256`), and only once the loop's keyed log records a human seal (`APPROVED` or
`RESEALED`, written by `--approve --loop`). A loop.json no human approved (one `--create-loop`
copied from a template, which anyone who can run automaton may do) runs no command and posts to
no webhook: the event is logged `WARNING reason=notify_not_approved` instead. A halt for an
invalid or changed loop.json still reaches the human who sealed the last good one.
A gate that refuses the same way at every fire (`needs_approval`, `deferred`) notifies once per
cause; the causes sent are remembered in `<loop>/.state.notified` until a gate passes.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from automaton.core import jsontext
from automaton.core.digest import sha256_hex
from automaton.core.errors import AutomatonError, one_line
from automaton.core.loopconfig import Notify
from automaton.core.loopstate import Event, LogEvent, LoopState
from automaton.core.names import LoopName
from automaton.core.scores import score_text
from automaton.proc import run_capture
from automaton.store import loops
from automaton.store.atomic import atomic_write
from automaton.store.chainlog import utc_now
from automaton.store.layout import Project
from automaton.store.loops import Loop

EVENT_ENV = "AUTOMATON_EVENT"  # the event name, for a command that does not read stdin
MESSAGE_ENV = "AUTOMATON_MESSAGE"  # the one-line message (payload["message"])
TIMEOUT_S = 10.0  # seconds per channel (command, webhook)
SENT_FILE = ".state.notified"  # a runtime file: git never sees it (`.state*` is excluded)
_SHOWN = 200  # characters of a failing command's output quoted in the failure line

__all__ = ["EVENT_ENV", "HUMAN_SEALS", "MESSAGE_ENV", "NOT_APPROVED", "TIMEOUT_S", "after_gate", "forget", "notify",
           "notify_completion", "notify_logged", "payload", "sealed_settings", "settings"]


# The keyed log events by which a human seals loop.json (`commands.loops.approve_loop`). Every
# other change of the seal is `CREATED`, which needs no human.
HUMAN_SEALS = frozenset({"APPROVED", "RESEALED"})
NOT_APPROVED = "notify not sent: "  # the start of the line `notify` returns for an unapproved block


def settings(project: Project, name: str) -> Notify | None:
    """The loop's `notify` block as a human approved it (`sealed_settings`), or None."""
    return sealed_settings(project, name)[0]


def sealed_settings(project: Project, name: str) -> tuple[Notify | None, str | None]:
    """(the `notify` block of the loop.json a human sealed, None) when there is one; else
    (None, why not: one line) when a block exists that may not be used, or (None, None) when
    there is no block at all. Raises what `Loop.inspect` raises (BadInput for an untracked
    loop, CorruptState for an unreadable state)."""
    loop = Loop.resolve(project, name)
    rec = loop.inspect()
    seal = rec.state.config_sha256 if not rec.tamper else None
    block = None
    for data in (loop.sealed_copy(), loop.config_bytes()):
        if data is None or seal is None or sha256_hex(data) != seal:
            continue
        try:
            block = loops.parse_config_bytes(data, f"loop {loop.name} loop.json").notify
        except AutomatonError:
            continue
        break
    if block is None:
        if seal is None:
            return None, f"{NOT_APPROVED}the loop's state cannot be trusted ({rec.tamper})"
        return None, None
    if not rec.chain.ok or not any(line.event in HUMAN_SEALS for line in rec.chain.lines):
        return None, (f"{NOT_APPROVED}loop.json's notify settings were never approved by a human; a human"
                      f" reviews {loop.config_file} and runs automaton --approve --loop {loop.name}")
    return block, None


def payload(project: Project, name: str, event: str, state: LoopState | None, **extra: Any) -> dict[str, Any]:
    """The JSON body: {event, loop, project (absolute path), at (ISO-8601 UTC), status,
    halt_reason, halt_detail, iteration_count, spent_usd (USD, all ticks), last_score (0..1 or
    null), message (one line for a desktop notification), next_step (the command a human runs,
    or null)} plus `extra` (e.g. reason, task, task_phase)."""
    body: dict[str, Any] = {"event": event, "loop": name, "project": str(project.root), "at": utc_now()}
    body.update(_state_fields(state))
    body.update(extra)
    body.setdefault("next_step", _next_step(name, event))
    body.setdefault("message", _message(body))
    return body


def _state_fields(state: LoopState | None) -> dict[str, Any]:
    """The payload's keys taken from the loop state (each null without a state)."""
    if state is None:
        return dict.fromkeys(("status", "halt_reason", "halt_detail", "iteration_count", "spent_usd", "last_score"))
    return {"status": state.status, "halt_reason": state.halt_reason, "halt_detail": state.halt_detail,
            "iteration_count": state.iteration_count, "spent_usd": state.spent_usd,
            "last_score": state.last_verdict.score if state.last_verdict is not None else None}


def _next_step(name: str, event: str) -> str | None:
    return {"halt": f"automaton --approve --loop {name}", "complete": f"automaton --loop-status {name}",
            "needs_approval": "automaton --approve --task <task>",
            "deferred": f"automaton --check-gate {name}"}.get(event)


def _message(body: dict[str, Any]) -> str:
    loop, event = body["loop"], body["event"]
    if event == "halt":
        detail = f": {body['halt_detail']}" if body.get("halt_detail") else ""
        return one_line(f"automaton: loop {loop} halted ({body.get('halt_reason')}{detail})")
    if event == "complete":
        score = body.get("last_score")
        shown = "" if score is None else f" (score {score_text(score)})"
        return one_line(f"automaton: loop {loop} is complete{shown}")
    if event == "needs_approval":
        return one_line(f"automaton: loop {loop} waits for a sign-off of task {body.get('task')}"
                        f" ({body.get('task_phase')})")
    if body.get("until"):
        return one_line(f"automaton: loop {loop} waits for the {body.get('harness')} usage limit until"
                        f" {body['until']}")
    return one_line(f"automaton: loop {loop} put a tick off ({body.get('reason')})")


def notify(project: Project, name: str, event: str, body: dict[str, Any], *, once: str | None = None) -> str | None:
    """Send `event` with JSON `body` through the loop's notify command and webhook, when its
    `notify.events` lists it. Returns None when sent (or nothing is configured), else one line
    saying what failed (starting with NOT_APPROVED when the block may not be used: nothing was
    run or posted); never raises. `once`: a key of the cause; the same key for the same
    event is sent only once until `forget` (a passing gate) clears it."""
    try:
        found, refused = sealed_settings(project, name)
        if refused is not None:  # logged once per cause, as the sending would have been
            if once is not None:
                if _sent(project, name).get(event) == once:
                    return None
                _remember(project, name, event, once)
            return refused
        if found is None or event not in found.events:
            return None
        if once is not None and _sent(project, name).get(event) == once:
            return None
        data = json.dumps(body, sort_keys=True)
        failed = [f for f in (_run(found.command, event, data, str(body.get("message", ""))) if found.command else None,
                              _post(found.webhook, data) if found.webhook else None) if f]
        if once is not None and not failed:
            _remember(project, name, event, once)
        return "; ".join(failed) or None
    except Exception as exc:  # never let a notification break a halt or a tick
        return one_line(f"notify {event} failed: {type(exc).__name__}: {exc}")


def _run(argv: list[str], event: str, data: str, message: str) -> str | None:
    env = dict(os.environ, **{EVENT_ENV: event, MESSAGE_ENV: message})
    got = run_capture(argv, stdin=data, env=env, timeout_s=TIMEOUT_S)
    if got.code == 0:
        return None
    said = one_line((got.err or got.out).strip())[:_SHOWN]
    return f"notify command {argv[0]} failed (exit {got.code})" + (f": {said}" if said else "")


def _post(url: str, data: str) -> str | None:
    """POST `data` as JSON. The failure line names the scheme and host only: a webhook's path
    or query often holds its secret (a topic, a token)."""
    # lazy: only a webhook needs http.client and email (a quarter of --check-gate's imports otherwise)
    import urllib.error
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    where = f"{parts.scheme}://{parts.hostname}"
    if parts.scheme not in ("http", "https"):
        return f"notify webhook {where} refused: only http and https are sent to"
    req = urllib.request.Request(url, data=data.encode("utf-8"), method="POST",
                                 headers={"Content-Type": "application/json", "User-Agent": "automaton-notify"})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            status = int(resp.status)
    except urllib.error.HTTPError as exc:
        return f"notify webhook {where} answered HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return one_line(f"notify webhook {where} failed: {reason}")
    return None if 200 <= status < 300 else f"notify webhook {where} answered HTTP {status}"


def _sent_path(project: Project, name: str) -> Path:
    return project.loop_dir(LoopName.of(name)) / SENT_FILE


def _sent(project: Project, name: str) -> dict[str, str]:
    try:
        found = jsontext.loads(_sent_path(project, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _remember(project: Project, name: str, event: str, key: str) -> None:
    sent = {**_sent(project, name), event: key}
    atomic_write(_sent_path(project, name), (json.dumps(sent, sort_keys=True) + "\n").encode("utf-8"))


def forget(project: Project, name: str) -> None:
    """A gate passed: the next refusal of any cause is news again (best effort)."""
    with contextlib.suppress(OSError):
        _sent_path(project, name).unlink(missing_ok=True)


def notify_logged(project: Project, name: str, event: str, body: dict[str, Any], *,
                  once: str | None = None) -> str | None:
    """`notify`, and a failure also logged as `WARNING reason=notify_failed detail=…` (or
    `reason=notify_not_approved` for a notify block no human approved) in the loop's log
    (itself best effort). Returns the failure line or None; never raises."""
    failed = notify(project, name, event, body, once=once)
    if failed is not None:
        reason = "notify_not_approved" if failed.startswith(NOT_APPROVED) else "notify_failed"
        # a log that cannot be written now is the next gate's finding, not the notifier's
        with contextlib.suppress(Exception):
            loops.log_event(project, name, LogEvent(Event.WARNING, {"reason": reason, "event": event,
                                                                     "detail": failed}))
    return failed


def notify_completion(project: Project, name: str, state: LoopState) -> str | None:
    """The runner calls this once, right after the tick whose state it wrote says `complete`
    (`state`: that new state). Returns the failure line (already logged) or None; never raises."""
    return notify_logged(project, name, "complete", payload(project, name, "complete", state))


# Gate reasons that put a tick off without a halt and without a human sign-off being the cause.
DEFERRED_REASONS = ("budget_unknown", "task_untracked", "task_tampered")


def after_gate(project: Project, name: str, data: dict[str, Any] | None, state: LoopState, *,
               detail: str | None = None) -> str | None:
    """What `--check-gate` notifies, from its result `data` (the gate object plus halted_now) and
    the gate's `detail` (one line, or None):
    a new halt -> `halt`; reason `waiting:approval` -> `needs_approval` (once per task and
    phase); a DEFERRED_REASONS refusal -> `deferred` (once per reason); `deferred:<until>` (the
    agent account's usage limit) -> `deferred` with `until` and `harness` (once per deferral,
    key `deferred:<until>`, as the runner sends it); a passing gate clears the once-keys.
    Returns the failure line (already logged) or None; never raises."""
    if data is None:
        return None
    reason = str(data.get("reason"))
    if data.get("ok"):
        forget(project, name)
        return None
    if data.get("halted_now"):
        return notify_logged(project, name, "halt", payload(project, name, "halt", state, reason=reason))
    if reason == "waiting:approval":
        task, phase = data.get("task"), data.get("task_phase")
        body = payload(project, name, "needs_approval", state, reason=reason, detail=detail, task=task,
                       task_phase=phase, next_step=f"automaton --approve --task {task}")
        return notify_logged(project, name, "needs_approval", body, once=f"{task}@{phase}")
    if reason in DEFERRED_REASONS:
        body = payload(project, name, "deferred", state, reason=reason, detail=detail, task=data.get("task"))
        return notify_logged(project, name, "deferred", body, once=f"{reason}: {detail}")
    if reason.startswith("deferred:"):  # the account's usage limit: once per deferral (the tick that hit it sent it)
        body = payload(project, name, "deferred", state, reason="usage_limit", detail=detail,
                       until=reason.partition(":")[2], harness=data.get("harness"))
        return notify_logged(project, name, "deferred", body, once=reason)
    return None
