"""The loop model: `loop.json` (LoopConfig) and `.state.loop` validation (docs/architecture.md#loop-files).

Pure: bytes/objects in, validated values or BadInput/CorruptState out. Every message names the
file and the key, because a brake that silently takes a wrong value is a brake that leaks.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from automaton.core import jsontext
from automaton.core.errors import BadInput, CorruptState, InvalidFields
from automaton.core.loopstate import SCHEMA_VERSION, LoopState, Verdict, usd_to_micro
from automaton.core.loopstate import initial_state as initial_state
from automaton.core.names import LoopName, TaskRef

# The loop store and the gates import this module on every tick, `--check-gate` and a tick that
# gives up on a busy lock, each of which loads `dataclasses` already (LoopState): annotations
# only under TYPE_CHECKING, so `typing` stays off those paths (tests/test_imports.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    _T = TypeVar("_T")

STATUSES = ("running", "halted", "paused", "complete")
DEATHS = ("iterations_exhausted", "budget_exhausted", "human_intervention", "drift_detected", "verifier_failed")
SCORERS = ("junit", "summary", "agent")
SANDBOX_MODES = ("on", "off")
# loop.json "isolation": what a sandboxed tick needs beneath Landlock (see `LoopConfig.isolation`).
ISOLATION_MODES = ("namespaces", "landlock-only")
# What a loop can tell a human about (loop.json `notify.events`): a new halt, a tick the gate put
# off without halting, the loop reaching its goal, a task sign-off the loop waits for.
NOTIFY_EVENTS = ("halt", "deferred", "complete", "needs_approval")
# Upper bounds of the brakes (a brake that is finite but absurd, 1e30 iterations or
# 1e308 USD, does not brake). Units: iterations, USD, seconds, scores.
MAX_ITERATIONS = 100_000  # iterations per approval
MAX_USD = 100_000.0  # USD: max_budget_usd and max_tick_usd
MAX_TIMEOUT_S = 86_400  # seconds per role run (one day)
MAX_PLATEAU_WINDOW = 1_000  # scores
MAX_UNSCORED = 1_000  # unscored ticks in a row before the loop halts
DEFAULT_MAX_UNSCORED = 3
MAX_OUTPUT_MB = 10_240  # MiB of each output stream a role run keeps (10 GiB)
DEFAULT_MAX_OUTPUT_MB = 50
MIB = 1024 * 1024  # bytes in one `max_output_mb` unit
# In a verify command's arguments: the loop folder where the machine running the tick keeps it
# (`store.loops.with_loop_dir`), so loop.json names the loop's own files without a machine's path.
LOOP_DIR = "{loop_dir}"
_HARNESS_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True)
class HarnessConfig:
    name: str
    model: str | None
    args: list[str]
    timeout_s: int  # seconds, per role run
    command: list[str] | None  # argv of the `command` harness
    local: bool  # no USD cost: the budget gate asks the VRAM probe (automaton.vram)
    kv_kib_per_token: float | None  # KiB of KV cache per token of the local model
    # MiB (1024 * 1024 bytes) of stdout and of stderr kept per role run and verify command: the
    # last ones, the front is dropped (`proc.run_streaming(max_bytes=…)`), 1..MAX_OUTPUT_MB.
    max_output_mb: int = DEFAULT_MAX_OUTPUT_MB


@dataclass(frozen=True)
class RolePrompt:
    prompt: str  # file name relative to the loop folder


@dataclass(frozen=True)
class VerifyRole:
    command: list[str] | None
    prompt: str | None
    score: str  # "junit" | "summary" | "agent"
    # A folder of tests relative to the loop folder, copied into the verifier's export for each
    # run and hidden from every role's sandbox (runner/freeze.py); None: no holdout tests.
    holdout: str | None = None


@dataclass(frozen=True)
class OrchestrateRole:
    builtin: bool
    prompt: str | None


@dataclass(frozen=True)
class Roles:
    implement: RolePrompt
    verify: VerifyRole
    orchestrate: OrchestrateRole


@dataclass(frozen=True)
class Brakes:
    max_iterations: int  # iterations per approval, >= 1
    max_budget_usd: float | None  # USD per approval, > 0; None only for a local harness
    max_tick_usd: float  # USD cap of one tick, > 0; also the cost of a tick whose cost is unknown
    score_plateau_window: int  # scores compared by the plateau gate, >= 1
    plateau_epsilon: float  # max - min at or under this is flat, >= 0
    target_score: float  # 0..1; a plateau at or above it is not a failure
    # ticks in a row whose verdict has no score before the loop halts verifier_failed, 1..MAX_UNSCORED
    max_unscored: int = DEFAULT_MAX_UNSCORED


@dataclass(frozen=True)
class BlastRadius:
    use_worktree: bool
    file_scope: list[str]  # gitignore-style patterns relative to the worktree root, non-empty
    base_branch: str | None
    # gitignore-style patterns the verifier always takes from the base commit, and which a tick
    # may not change (a planted conftest.py could force every test to pass). None: derived from
    # the verify command (git.protect.default_protected).
    protected: list[str] | None = None


@dataclass(frozen=True)
class Schedule:
    interval_seconds: int  # seconds between scheduled ticks


@dataclass(frozen=True)
class Notify:
    """loop.json `notify`: who hears of the loop's events. `command`: argv run with the event's
    JSON on stdin (None: no command); `webhook`: an http(s) URL the JSON is POSTed to (None: no
    webhook); `events`: the NOTIFY_EVENTS sent (default all). At least one of command/webhook."""

    command: list[str] | None
    webhook: str | None
    events: tuple[str, ...] = NOTIFY_EVENTS


@dataclass(frozen=True)
class LoopConfig:
    schema_version: int
    name: str
    template: str
    description: str
    task: str | None
    harness: HarnessConfig
    roles: Roles
    brakes: Brakes
    blast_radius: BlastRadius
    schedule: Schedule
    sha256: str  # SHA-256 hex of the loop.json bytes as read (the seal)
    # "on": every agent process of a tick runs in the kernel sandbox, and a tick refuses to run
    # where none is available; "off": no sandbox (sealed like every brake, warned on every tick).
    sandbox: str = "on"
    notify: Notify | None = None  # None: no notifications
    # "namespaces": a tick refuses to run where the user, mount and network namespaces around
    # the agent cannot be entered; "landlock-only": it then runs under Landlock alone (warned
    # on every tick). Sealed like every brake. Namespaces that work are used either way.
    isolation: str = "namespaces"
    # The git remote (a remote name or URL) that holds the loop's state ref
    # (`refs/automaton/loops/<name>`, store/remote.py); None: the state lives in this checkout only.
    state_remote: str | None = None


class _Problems:
    """The invalid fields of one loop.json, collected so that one error names them all."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def field(self, get: Callable[[], _T], fallback: _T) -> _T:
        """`get()`, or `fallback` with its BadInput's message kept (one line per field)."""
        try:
            return get()
        except BadInput as exc:
            self.lines.append(exc.message)
            return fallback

    def raise_any(self) -> None:
        """BadInput (exit 2) for the one kept line; InvalidFields for several, one per field."""
        lines = tuple(dict.fromkeys(self.lines))
        if len(lines) > 1:
            raise InvalidFields(lines)
        if lines:
            raise BadInput(lines[0])


class _Reader:
    """Typed access to one JSON object; every error names `source` and the dotted key.
    `problems`: where unknown keys are kept (each its own line) instead of raised at once."""

    def __init__(self, data: object, source: str, where: str, allowed: tuple[str, ...], exc: type[BadInput],
                 problems: _Problems | None = None):
        self.source, self.where, self.exc, self.problems = source, where, exc, problems
        if not isinstance(data, dict):
            raise exc(f"{source}: {where or 'the file'} must be a JSON object, got {_kind(data)}")
        for key in sorted(set(data) - set(allowed)):
            said = f"{source}: unknown key {self._key(key)!r} (allowed here: {', '.join(allowed)})"
            if problems is None:
                raise exc(said)
            problems.lines.append(said)
        self.data: dict[str, Any] = data

    def _key(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, want: str) -> BadInput:
        got = self.data.get(key)
        return self.exc(f"{self.source}: {self._key(key)} must be {want}, got {json.dumps(got)[:60]}")

    def has(self, key: str) -> bool:
        return key in self.data

    def sub(self, key: str, allowed: tuple[str, ...], default: object = None) -> _Reader:
        value = self.data.get(key, {} if default is None else default)
        return _Reader(value, self.source, self._key(key), allowed, self.exc, self.problems)

    def string(self, key: str, default: str | None = None, *, null: bool = False) -> Any:
        if key not in self.data:
            if default is None and not null:
                raise self.exc(f"{self.source}: missing key {self._key(key)!r}")
            return default
        value = self.data[key]
        if value is None and null:
            return None
        if not isinstance(value, str) or "\x00" in value:  # NUL: no path, argv or name can hold it
            raise self.fail(key, "a string without NUL" + (" or null" if null else ""))
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "true or false")
        return value

    def integer(self, key: str, default: object, *, minimum: int, maximum: int | None = None) -> int:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
                maximum is not None and value > maximum):
            raise self.fail(key, f"an integer >= {minimum}" + ("" if maximum is None else f" and <= {maximum}"))
        return value

    def number(self, key: str, default: object, *, low: float, strict: bool = False,
               high: float | None = None, null: bool = False) -> Any:
        value = self.data.get(key, default)
        if value is None and null:
            return None
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if ok:
            ok = (value > low if strict else value >= low) and (high is None or value <= high)
        if not ok:
            bound = f"> {low:g}" if strict else f">= {low:g}"
            if high is not None:
                bound += f" and <= {high:g}"
            raise self.fail(key, f"a finite number {bound}" + (" or null" if null else ""))
        return float(value)

    def strings(self, key: str, default: list[str] | None = None, *, null: bool = False,
                nonempty: bool = False) -> Any:
        if key not in self.data:
            if default is None and not null:
                raise self.exc(f"{self.source}: missing key {self._key(key)!r}")
            return None if default is None else list(default)
        value = self.data[key]
        if value is None and null:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) and "\x00" not in v for v in value) or (
                nonempty and not value):
            raise self.fail(key, ("a non-empty" if nonempty else "a") + " list of strings (without NUL)")
        return list(value)


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _prompt_name(r: _Reader, key: str, *, null: bool) -> Any:
    """A prompt file name relative to the loop folder: no absolute path, no `..`."""
    value = r.string(key, null=null)
    if value is None:
        return None
    if _in_loop_folder(value) is None:
        raise r.fail(key, "a file name relative to the loop folder (no absolute path, no '..')")
    return value


def _in_loop_folder(value: str) -> list[str] | None:
    """The parts of `value` (`/` or `\\` between them) when it names a path inside the loop folder
    that is none of the loop's own entries (`runs/`, `worktree/`, `sealed/`, dot files); None
    for an empty, absolute or drive path, or one with an empty, `.` or `..` part."""
    parts = value.replace("\\", "/").split("/")
    if not value or value.startswith(("/", "\\")) or ":" in value or any(p in ("", ".", "..") for p in parts) \
            or parts[0].startswith(".") or parts[0] in ("runs", "worktree", "sealed"):
        return None
    return parts


def loads_strict(text: str, source: str, exc: type[BadInput] = BadInput) -> object:
    """json.loads that refuses duplicate keys and NaN/Infinity (both could hide a brake)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)  # every state and config read parses here: the key loop only on a duplicate
        if len(out) != len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    raise exc(f"{source}: duplicate key {key!r}")
                seen.add(key)
        return out

    def constant(name: str) -> Any:
        raise exc(f"{source}: {name} is not a number JSON allows")

    try:
        return jsontext.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except json.JSONDecodeError as err:
        raise exc(f"{source}: not valid JSON ({err.msg} at line {err.lineno}); fix or restore it") from None


def parse_config(data: object, source: str, defaults: dict[str, Any], sha256: str = "") -> LoopConfig:
    """Validate a loop.json object. Raises BadInput naming `source` and the key; with several
    invalid fields, one BadInput whose message has one such line for each (`_Problems`).

    Unknown keys anywhere are errors; a missing brake takes `defaults` (store.config.loop_defaults());
    brakes are never unbounded; booleans and strings are never numbers.
    """
    p = _Problems()
    top = _Reader(data, source, "", ("schema_version", "name", "template", "description", "task", "harness",
                                     "roles", "brakes", "blast_radius", "schedule", "sandbox",
                                     "notify", "isolation", "state_remote"), BadInput, p)
    version = p.field(lambda: top.integer("schema_version", None, minimum=1), SCHEMA_VERSION)
    if version > SCHEMA_VERSION:
        raise BadInput(f"{source}: schema_version {version} is newer than this automaton ({SCHEMA_VERSION}); upgrade")
    name = p.field(lambda: _checked(top, "name", LoopName.of, null=False), "")
    task = p.field(lambda: _checked(top, "task", TaskRef.parse, null=True), None)
    harness = p.field(lambda: _harness(top.sub("harness", ("name", "model", "args", "timeout_s", "command", "local",
                                                           "kv_kib_per_token", "max_output_mb")), defaults, p), None)
    roles = p.field(lambda: _roles(top.sub("roles", ("implement", "verify", "orchestrate"))), None)
    brakes = _brakes(top.sub("brakes", ("max_iterations", "max_budget_usd", "max_tick_usd", "score_plateau_window",
                                        "plateau_epsilon", "target_score", "max_unscored")), defaults,
                     harness is not None and harness.local, p)
    blast = p.field(lambda: _blast_radius(top.sub("blast_radius", ("use_worktree", "file_scope", "base_branch",
                                                                   "protected"))), None)
    # One of a few words: a value of any other type or spelling is named with the words it may be.
    sandbox = p.field(lambda: _word(top, "sandbox", SANDBOX_MODES), "on")
    isolation = p.field(lambda: _word(top, "isolation", ISOLATION_MODES), "namespaces")
    schedule = p.field(lambda: Schedule(top.sub("schedule", ("interval_seconds",)).integer(
        "interval_seconds", defaults["interval_seconds"], minimum=1)), None)
    notify = p.field(lambda: _notify(top.sub("notify", ("command", "webhook", "events")))
                     if top.data.get("notify") is not None else None, None)
    template = p.field(lambda: top.string("template", ""), "")
    description = p.field(lambda: top.string("description", ""), "")
    state_remote = p.field(lambda: _state_remote(top), None)
    p.raise_any()
    assert harness is not None and roles is not None and blast is not None and schedule is not None  # else raised
    return LoopConfig(version, name, template, description, task, harness,
                      roles, brakes, blast, schedule, sha256, sandbox, notify, isolation, state_remote)


def _checked(r: _Reader, key: str, parse: Callable[[str], object], *, null: bool) -> Any:
    """String `key` (None when null and allowed) that `parse` accepts; its BadInput names the key."""
    value = r.string(key, null=null)
    if value is not None:
        try:
            parse(value)
        except BadInput as err:
            raise BadInput(f"{r.source}: {key}: {err.message}") from None
    return value


def _word(r: _Reader, key: str, words: tuple[str, ...]) -> str:
    """`key` when it is one of `words` (default: the first); else BadInput naming them."""
    value = r.data.get(key, words[0])
    if value not in words:
        raise r.fail(key, " | ".join(f'"{w}"' for w in words))
    return str(value)


def _blast_radius(br: _Reader) -> BlastRadius:
    for key in ("file_scope", "protected"):
        for pattern in br.strings(key, null=True) or []:
            if ".." in pattern.replace("\\", "/").split("/"):
                # gitignore patterns are relative to the worktree root: `..` matches nothing
                # there, so such a scope would silently make every edit drift (or protect nothing)
                raise br.fail(key, "gitignore patterns inside the worktree (no '..')")
    return BlastRadius(br.boolean("use_worktree", True), br.strings("file_scope", nonempty=True),
                       br.string("base_branch", null=True), br.strings("protected", null=True))


def _state_remote(r: _Reader) -> str | None:
    """loop.json `state_remote`: None, or a remote that `remote_spelling_ok` accepts."""
    state_remote: str | None = r.string("state_remote", null=True)
    if state_remote is not None and not remote_spelling_ok(state_remote):
        raise r.fail("state_remote", "a git remote name or URL (not empty, no leading '-', no whitespace)")
    if state_remote is not None and remote_has_credential(state_remote):  # never echoed: it holds the secret
        raise r.exc(f"{r.source}: state_remote must be a URL without a credential in it (hand the token in as"
                    " $AUTOMATON_GIT_TOKEN); the value given carries one")
    return state_remote


def remote_spelling_ok(remote: str) -> bool:
    """Whether `remote` may name a git remote for `--state-remote` / loop.json `state_remote`:
    non-empty, no whitespace or control character, never starting with `-` (git would read an
    option), and no `ext::` transport (which runs a program)."""
    return bool(remote) and not remote.startswith("-") and not any(c.isspace() or ord(c) < 32 for c in remote) \
        and not remote.lower().startswith("ext::")


def remote_has_credential(remote: str) -> bool:
    """Whether `remote` is a URL that carries a secret: any user part of an http(s) URL (a token
    may be the user name), or a password in any URL's user part (`ssh://git@host/…` carries
    none). Such a value would sit in the runner's command line, which every process of the user
    reads in /proc, and in git's messages."""
    scheme, sep, rest = remote.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return False
    user = rest.split("/", 1)[0].rsplit("@", 1)[0]
    return scheme.lower() in ("http", "https") or ":" in user


def _notify(n: _Reader) -> Notify:
    """`notify`: a non-empty argv and/or an http(s) URL with a host; events from NOTIFY_EVENTS
    (duplicates dropped, order kept). A block that reaches nobody is an error, not silence."""
    command = n.strings("command", null=True)
    if command is not None and not command:
        raise n.fail("command", "a non-empty argv list or null")
    webhook = n.string("webhook", null=True)
    if webhook is not None and not _http_url(webhook):
        raise n.fail("webhook", "an http:// or https:// URL with a host, or null")
    if command is None and webhook is None:
        raise n.exc(f"{n.source}: notify needs a command or a webhook (remove the notify block to turn"
                    " notifications off)")
    events = n.strings("events", list(NOTIFY_EVENTS), nonempty=True)
    unknown = [e for e in events if e not in NOTIFY_EVENTS]
    if unknown:
        raise n.fail("events", "a non-empty list of " + ", ".join(f'"{e}"' for e in NOTIFY_EVENTS))
    return Notify(command, webhook, tuple(dict.fromkeys(events)))


def _http_url(text: str) -> bool:
    """An absolute http(s) URL with a host and no whitespace or control characters."""
    from urllib.parse import urlsplit

    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text):
        return False
    try:
        parts = urlsplit(text)
        host = parts.hostname
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(host)


def _harness(h: _Reader, defaults: dict[str, Any], p: _Problems) -> HarnessConfig:
    """The harness block; each invalid field is kept in `p` (its fallback stands in)."""
    name = h.string("name")
    if not _HARNESS_NAME.match(name):
        raise h.fail("name", "a harness name like 'claude' or 'command'")
    known = len(p.lines)
    command = p.field(lambda: _command(h), None)
    if name == "command" and command is None and len(p.lines) == known:  # missing or null, not invalid
        p.lines.append(f"{h.source}: harness.command is required when harness.name is 'command'")
    return HarnessConfig(
        name=name, model=p.field(lambda: h.string("model", null=True), None),
        args=p.field(lambda: h.strings("args", []), []),
        timeout_s=p.field(lambda: h.integer("timeout_s", defaults["timeout_s"], minimum=1, maximum=MAX_TIMEOUT_S), 1),
        command=command, local=p.field(lambda: h.boolean("local", False), False),
        kv_kib_per_token=p.field(lambda: h.number("kv_kib_per_token", None, low=0, strict=True, null=True), None),
        max_output_mb=p.field(lambda: h.integer("max_output_mb", defaults.get("max_output_mb", DEFAULT_MAX_OUTPUT_MB),
                                                minimum=1, maximum=MAX_OUTPUT_MB), 1),
    )


def _command(h: _Reader) -> Any:
    command = h.strings("command", null=True)
    if command is not None and not command:
        raise h.fail("command", "a non-empty argv list or null")
    return command


def _roles(r: _Reader) -> Roles:
    if not r.has("implement"):
        raise r.exc(f"{r.source}: missing key 'roles.implement'")
    impl = r.sub("implement", ("prompt",))
    ver = r.sub("verify", ("command", "prompt", "score", "holdout"))
    command = ver.strings("command", null=True)
    prompt = _prompt_name(ver, "prompt", null=True)
    if command is None and prompt is None:
        raise r.exc(f"{r.source}: roles.verify needs a command or a prompt (a loop without a verifier never stops)")
    score = ver.string("score", "junit" if command is not None else "agent")
    if score not in SCORERS:
        raise ver.fail("score", " | ".join(f'"{s}"' for s in SCORERS))
    holdout = _holdout(ver)
    orch = r.sub("orchestrate", ("builtin", "prompt"))
    builtin = orch.boolean("builtin", True)
    oprompt = _prompt_name(orch, "prompt", null=True)
    if not builtin and oprompt is None:
        raise r.exc(f"{r.source}: roles.orchestrate needs builtin true or a prompt")
    return Roles(RolePrompt(_prompt_name(impl, "prompt", null=False)), VerifyRole(command, prompt, score, holdout),
                 OrchestrateRole(builtin, oprompt))


def _holdout(ver: _Reader) -> str | None:
    """roles.verify.holdout: a relative folder path inside the loop folder, or None."""
    value = ver.string("holdout", null=True)
    if value is None:
        return None
    parts = _in_loop_folder(value)
    if parts is None:
        raise ver.fail("holdout", "a folder path relative to the loop folder (no '..', not absolute, not one of"
                       " the loop's own runs/, worktree/, sealed/ or dot files)")
    return "/".join(parts)


def _brakes(b: _Reader, d: dict[str, Any], local: bool, p: _Problems) -> Brakes:
    """The brakes, each bounded below and above (MAX_ITERATIONS, MAX_USD, MAX_PLATEAU_WINDOW,
    MAX_UNSCORED); max_tick_usd may not exceed max_budget_usd (one tick could overspend the whole
    budget); a left-out max_tick_usd takes the default capped at max_budget_usd. Each invalid
    brake is kept in `p` (its fallback stands in; the caller raises)."""
    budget = p.field(lambda: b.number("max_budget_usd", d["max_budget_usd"], low=0, strict=True, high=MAX_USD,
                                      null=local), None)
    default_tick = d["max_tick_usd"]
    if budget is not None and not b.has("max_tick_usd") and isinstance(default_tick, int | float):
        default_tick = min(default_tick, budget)  # a left-out cap never exceeds the budget it caps
    tick = p.field(lambda: b.number("max_tick_usd", default_tick, low=0, strict=True, high=MAX_USD), None)
    if budget is not None and tick is not None and tick > budget:
        p.lines.append(f"{b.source}: brakes.max_tick_usd must be <= brakes.max_budget_usd ({budget:g}), got {tick:g}")
    return Brakes(
        max_iterations=p.field(lambda: b.integer("max_iterations", d["max_iterations"], minimum=1,
                                                 maximum=MAX_ITERATIONS), 1),
        max_budget_usd=budget,
        max_tick_usd=1.0 if tick is None else tick,
        score_plateau_window=p.field(lambda: b.integer("score_plateau_window", d["score_plateau_window"], minimum=1,
                                                       maximum=MAX_PLATEAU_WINDOW), 1),
        plateau_epsilon=p.field(lambda: b.number("plateau_epsilon", d["plateau_epsilon"], low=0), 0.0),
        target_score=p.field(lambda: b.number("target_score", d["target_score"], low=0, high=1), 1.0),
        max_unscored=p.field(lambda: b.integer("max_unscored", d.get("max_unscored", DEFAULT_MAX_UNSCORED),
                                               minimum=1, maximum=MAX_UNSCORED), 1),
    )


# ---- .state.loop ---------------------------------------------------------------------------

STATE_KEYS = (
    "schema_version", "name", "status", "halt_reason", "iteration_count", "resumed_count", "last_tick_at",
    "last_verdict", "score_history", "current_task", "worktree_branch", "worktree_path", "started_at",
    "spent_usd", "iterations_at_approval", "spent_usd_at_approval", "accepted_drift", "base_commit",
    "config_sha256", "worktree_fallback", "halt_detail",
)
COMMIT_HEX = re.compile(r"^[0-9a-f]{7,64}$")


def validate_state(data: object, source: str) -> LoopState:
    """Parse a `.state.loop` JSON object into a LoopState (fail closed); CorruptState naming `source`.

    Every key of STATE_KEYS present and no other; the types of the file format; the invariants
    of `LoopState.problem`. USD amounts become integer micro-USD (`core.loopstate.usd_to_micro`).
    """
    if isinstance(data, dict) and isinstance(data.get("schema_version"), int) and not isinstance(
            data["schema_version"], bool) and data["schema_version"] > SCHEMA_VERSION:
        raise CorruptState(f"{source}: schema_version {data['schema_version']} is newer than this automaton"
                           f" ({SCHEMA_VERSION}); upgrade automaton")
    r = _Reader(data, source, "", STATE_KEYS, CorruptState)
    missing = [k for k in STATE_KEYS if k not in r.data]
    if missing:
        raise CorruptState(f"{source}: missing key {missing[0]!r}; it was not written by automaton")
    if r.integer("schema_version", None, minimum=SCHEMA_VERSION) != SCHEMA_VERSION:
        raise r.fail("schema_version", str(SCHEMA_VERSION))
    status = r.string("status")
    if status not in STATUSES:
        raise r.fail("status", " | ".join(STATUSES))
    reason = r.string("halt_reason", null=True)
    if reason is not None and reason not in DEATHS:
        raise r.fail("halt_reason", "null or one of " + ", ".join(DEATHS))
    state = LoopState(
        SCHEMA_VERSION, r.string("name"), status, reason, r.integer("iteration_count", None, minimum=0),
        r.integer("resumed_count", None, minimum=0), r.string("last_tick_at", null=True), _verdict(r),
        _scores(r), _task(r), r.string("worktree_branch", null=True), r.string("worktree_path", null=True),
        r.string("started_at"), usd_to_micro(r.number("spent_usd", None, low=0)),
        r.integer("iterations_at_approval", None, minimum=0),
        usd_to_micro(r.number("spent_usd_at_approval", None, low=0)), tuple(r.strings("accepted_drift")),
        _commit(r), r.string("config_sha256"), r.string("worktree_fallback", null=True),
        r.string("halt_detail", null=True))
    problem = state.problem()
    if problem is not None:
        raise r.fail(*problem)
    return state


def _verdict(r: _Reader) -> Verdict | None:
    """`last_verdict`: null or {score (0..1 or null), passed, done, summary, source}; a key left
    out takes the unscored verdict's value, an unknown key is an error."""
    if r.data["last_verdict"] is None:
        return None
    v = r.sub("last_verdict", ("score", "passed", "done", "summary", "source"))
    return Verdict(v.number("score", None, low=0, high=1, null=True), v.boolean("passed", False),
                   v.boolean("done", False), v.string("summary", ""), v.string("source", "none"))


def _scores(r: _Reader) -> tuple[float, ...]:
    history = r.data["score_history"]
    if not isinstance(history, list) or not all(
            isinstance(s, int | float) and not isinstance(s, bool) and math.isfinite(s) for s in history):
        raise r.fail("score_history", "a list of numbers")
    return tuple(float(s) for s in history)


def _task(r: _Reader) -> str | None:
    task = r.string("current_task", null=True)
    if task is not None:
        try:
            TaskRef.parse(task)
        except BadInput:
            raise r.fail("current_task", "a task name or null") from None
    return task  # type: ignore[no-any-return]


def _commit(r: _Reader) -> str | None:
    commit = r.string("base_commit", null=True)
    if commit is not None and not COMMIT_HEX.match(commit):
        raise r.fail("base_commit", "a commit id (hex) or null")
    return commit  # type: ignore[no-any-return]


def state_json(state: LoopState) -> dict[str, object]:
    """The JSON object of `.state.loop` for `state`: the keys of STATE_KEYS in that order, USD as
    numbers (the inverse of `validate_state`; the bytes a previous release wrote come back
    unchanged)."""
    return {
        "schema_version": state.schema_version, "name": state.name, "status": state.status,
        "halt_reason": state.halt_reason, "iteration_count": state.iteration_count,
        "resumed_count": state.resumed_count, "last_tick_at": state.last_tick_at,
        "last_verdict": None if state.last_verdict is None else state.last_verdict.to_dict(),
        "score_history": list(state.score_history), "current_task": state.current_task,
        "worktree_branch": state.worktree_branch, "worktree_path": state.worktree_path,
        "started_at": state.started_at, "spent_usd": state.spent_usd,
        "iterations_at_approval": state.iterations_at_approval, "spent_usd_at_approval": state.spent_usd_at_approval,
        "accepted_drift": list(state.accepted_drift), "base_commit": state.base_commit,
        "config_sha256": state.config_sha256, "worktree_fallback": state.worktree_fallback,
        "halt_detail": state.halt_detail,
    }
