"""`.automaton/config.json`: per-project overrides of the per-phase edit scopes, sealed by a human.

Shape: `{"schema_version": 1, "scopes": {"<base phase>": ["gitignore-style pattern", …]},
"sandbox": {"hide": ["~/.config/mytool", "/abs/path", …], "unhide": ["~/.netrc", …]},
"sessions": "sandboxed" | "hooks-only", "hooks": {"allow_tools": ["mcp__github__get_*", …]}}`.
`hooks.allow_tools` names tools the agent hooks cannot read (MCP tools, `SlashCommand`, a tool
added later), which they otherwise deny: a human's word that those tools write no project file.
`sessions` says how an interactive agent session (a human running `claude` in the project) is
held: "sandboxed" — the hook denies every writing tool call unless the calling session runs
inside automaton's kernel sandbox (`automaton --sandbox -- <agent>`, `hooks.confined`);
"hooks-only" — the hooks alone judge each call (best effort: a shell line can hide what it
writes). `--install-hooks` records it; absent (projects set up before it existed) reads as
"hooks-only", and `--doctor` suggests the change.
`sandbox.hide` adds credential stores to the packaged list (`core.secrets.CREDENTIAL_STORES`)
that no agent process reads; `sandbox.unhide` takes entries of that list out (each must be
one of them, spelled as there), and `--doctor` and every tick name what it took out.
A phase listed here may write its own artifact plus the project-relative paths matching its
patterns (replacing the built-in rule for `implement` and `doc_review`); `tasks/`, `.automaton/`
and the always-denied paths stay denied. Read on every `--can-edit` and hook call; a file that
is not this shape is an error naming it (exit 2; a hook then denies), never ignored.

The file is sealed like a loop's loop.json, because it widens or narrows what agents may write:
`automaton --approve --config` (a human act) appends a line to the chained log
`.automaton/config.log` whose `state` token is `sha256:<hex>` of the approved bytes (`absent`
for an approved removal), and keeps a copy at `.automaton/sealed/config.json` to show the next
approver what changed. Every read checks the file against the last seal and fails closed
(ConfigNotSealed, exit 2): a config.json that differs from the seal, exists without one, or was
removed after one, and a log whose chain is broken. No config.json and no seal: the built-in
scopes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from automaton.core import jsontext
from automaton.core import phases as ph
from automaton.core.digest import sha256_hex
from automaton.core.errors import BadInput, Refused
from automaton.core.record import record
from automaton.store import anchor, chainlog
from automaton.store.layout import Project

SCHEMA_VERSION = 1
# "isolation": what `automaton --sandbox` needs beneath Landlock: "namespaces" (the default:
# it refuses where they cannot be entered) or "landlock-only" (it then runs under Landlock alone).
ISOLATION_MODES = ("namespaces", "landlock-only")
SESSION_MODES = ("sandboxed", "hooks-only")
# How "hooks-only" reads wherever it is shown (--doctor, --audit, the dashboard).
BEST_EFFORT = ("hooks-only (best effort: the hooks judge each tool call; a program an agent runs can hide what"
               " it writes)")
SCOPABLE = frozenset(ph.ARTIFACT)  # the base phases that have a scope at all
ABSENT = "absent"  # the seal token of an approved removal: no config.json
APPROVE_CONFIG = "automaton --approve --config"
LOCK = "config.lock"
APPROVED, REMOVED = "CONFIG_APPROVED", "CONFIG_REMOVED"  # the events of config.log


class ConfigNotSealed(BadInput):
    """config.json is not the one a human sealed (exit 2, like an invalid config.json: every
    decision that needs the project's scopes is denied, and a loop gate halts)."""


def token_of(data: bytes | None) -> str:
    """The seal token of config.json bytes: `sha256:<hex>`, or `absent` for no file."""
    return ABSENT if data is None else "sha256:" + sha256_hex(data)


@record(frozen=True)
class Seal:
    """config.json as found, against its seal.

    `current`: the file's bytes now (None: no file). `sealed`: the token of the last approval
    in config.log (None: never sealed). `broken`: why config.log cannot be trusted ("" when its
    chain is intact; then `sealed` is None).
    """

    current: bytes | None
    sealed: str | None
    broken: str = ""

    @property
    def token(self) -> str:
        return token_of(self.current)

    @property
    def ok(self) -> bool:
        """The file is the sealed one, or there is neither a file nor a seal."""
        if self.broken:
            return False
        return self.current is None if self.sealed is None else self.sealed == self.token

    @property
    def seen(self) -> str:
        """What an approval is bound to: the file now and the seal it replaces (one line)."""
        return f"{self.token} over {self.sealed or 'no seal'}" + (" (broken log)" if self.broken else "")


def _read_current(path: Path) -> bytes | None:
    # read_all: a FIFO at config.json is an error, never waited on (the hook reads this file
    # before every edit, and a hook that does not answer lets the edit through).
    from automaton.store.atomic import read_all

    try:
        return read_all(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror}); fix or remove it") from None


def read_seal(project: Project) -> Seal:
    """config.json and its seal as they are now. BadInput (exit 2) when config.json exists but
    cannot be read (a folder, no permission)."""
    current = _read_current(project.config_file)
    chain = chainlog.read_chain(project.config_log)
    if not chain.ok:
        return Seal(current, None, f"{project.config_log}: {chain.error}")
    return Seal(current, chain.last_state)


def describe(seal: Seal) -> str:
    """How config.json stands against its seal, to follow the file's name ("is sealed", "has
    no seal (…)", …)."""
    if seal.ok:
        return "is sealed" if seal.current is not None else "is absent, and nothing is sealed"
    if seal.broken:
        return f"cannot be checked against its seal ({seal.broken})"
    if seal.current is None:
        return "was removed after a human sealed it"
    if seal.sealed is None:
        return "has no seal (a human never approved it)"
    return "is not the sealed project config (it changed after a human approved it)"


def problem(project: Project, seal: Seal | None = None) -> str | None:
    """Why config.json is not the sealed one, as one line naming the file and ending with the
    human's fix (`… runs automaton --approve --config`); None when it is (or neither exists)."""
    seal = seal or read_seal(project)
    if seal.ok:
        return None
    return f"{project.config_file} {describe(seal)}: a human reviews it and runs {APPROVE_CONFIG}"


def parse(data: bytes, path: Path) -> dict[str, list[str]]:
    """Phase -> patterns of config.json bytes; BadInput (exit 2) naming `path` and the key."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{path}: cannot read ({exc}); fix or remove it") from None
    try:
        obj = jsontext.loads(text, unique=True)
    except ValueError as exc:
        raise BadInput(f"{path}: not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(obj, dict):
        raise BadInput(f"{path}: expected a JSON object with 'schema_version' and 'scopes'")
    unknown = sorted(set(obj) - {"schema_version", "scopes", "isolation", "sandbox", "sessions", "hooks"})
    if unknown:
        raise BadInput(f"{path}: unknown key(s) {', '.join(unknown)}: only 'schema_version', 'scopes',"
                       " 'isolation', 'sandbox', 'sessions' and 'hooks'")
    if obj.get("isolation", ISOLATION_MODES[0]) not in ISOLATION_MODES:
        raise BadInput(f"{path}: isolation must be " + " or ".join(f'"{m}"' for m in ISOLATION_MODES))
    if obj.get("sessions", SESSION_MODES[1]) not in SESSION_MODES:
        raise BadInput(f"{path}: sessions must be " + " or ".join(f'"{m}"' for m in SESSION_MODES))
    version = obj.get("schema_version")
    if type(version) is not int or version > SCHEMA_VERSION or version < 1:
        raise BadInput(f"{path}: schema_version must be 1 (this automaton reads up to {SCHEMA_VERSION})")
    scopes = obj.get("scopes", {})
    if not isinstance(scopes, dict):
        raise BadInput(f"{path}: 'scopes' must map a phase to a list of patterns")
    out: dict[str, list[str]] = {}
    for phase, patterns in scopes.items():
        if phase not in SCOPABLE:
            raise BadInput(f"{path}: scopes.{phase}: not a phase with a scope ({', '.join(sorted(SCOPABLE))})")
        if not isinstance(patterns, list) or not all(isinstance(p, str) and p.strip() for p in patterns):
            raise BadInput(f"{path}: scopes.{phase} must be a list of non-empty pattern strings")
        out[phase] = list(patterns)
    parse_sandbox(obj.get("sandbox", {}), path)
    parse_hooks(obj.get("hooks", {}), path)
    return out


# A tool-name pattern: the characters of tool names (Claude Code's MCP tools are
# `mcp__<server>__<tool>` with the server's other characters turned into `_`, the hooks
# reference's "Match MCP tools") and fnmatch's `*`, `?`, `[…]`.
_TOOL_PATTERN = re.compile(r"[A-Za-z0-9_.:\-*?\[\]!]+")


def parse_hooks(value: object, path: Path) -> tuple[str, ...]:
    """`hooks.allow_tools` of config.json: fnmatch patterns (case-sensitive, over the whole
    tool name) of tools the agent hooks cannot read yet let through, e.g. `mcp__github__get_*`.
    BadInput (exit 2) naming `path` and the entry for an unknown key, a non-list, an entry with
    other characters, or one with no letter or digit (`*`, `?*`: it would let through every
    tool automaton does not know, ones added later included)."""
    if not isinstance(value, dict):
        raise BadInput(f"{path}: 'hooks' must be an object with an 'allow_tools' list")
    unknown = sorted(set(value) - {"allow_tools"})
    if unknown:
        raise BadInput(f"{path}: hooks: unknown key(s) {', '.join(unknown)}: only 'allow_tools'")
    patterns = value.get("allow_tools", [])
    if not isinstance(patterns, list):
        raise BadInput(f"{path}: hooks.allow_tools must be a list of tool-name patterns, e.g. [\"mcp__github__get_*\"]")
    for entry in patterns:
        if not isinstance(entry, str) or not _TOOL_PATTERN.fullmatch(entry):
            raise BadInput(f"{path}: hooks.allow_tools {entry!r}: a tool name or a pattern of one (letters, digits,"
                           " _ - . : and * ? [ ]), e.g. \"mcp__github__get_*\"")
        if not any(ch.isalnum() for ch in entry):
            raise BadInput(f"{path}: hooks.allow_tools {entry!r} would allow every tool automaton cannot read, ones"
                           " added later included: name the tools or one server's, e.g. \"mcp__github__get_*\"")
    return tuple(patterns)


def allow_tools(project: Project) -> tuple[str, ...]:
    """`hooks.allow_tools` of the sealed config.json; () when there is neither a file nor a
    seal. BadInput / ConfigNotSealed exactly as `scope_overrides`: a list the agent widened
    itself (an unsealed config.json) lets nothing through."""
    obj = _sealed_object(project)
    return parse_hooks(obj["hooks"], project.config_file) if "hooks" in obj else ()


def allowed_tool(project: Project, tool: str) -> str | None:
    """The first sealed `hooks.allow_tools` pattern matching `tool` (fnmatch, case-sensitive),
    or None. Errors as `allow_tools`."""
    from fnmatch import fnmatchcase  # only for a tool the hook cannot read: off its usual path

    return next((p for p in allow_tools(project) if fnmatchcase(tool, p)), None)


@record(frozen=True)
class SandboxLists:
    """`sandbox` of config.json: `hide` (entries added to the hidden credential stores, `~/…`
    or absolute) and `unhide` (entries of `CREDENTIAL_STORES` taken out), as written."""

    hide: tuple[str, ...] = ()
    unhide: tuple[str, ...] = ()


def _hide_entry(entry: object, path: Path) -> str:
    if not isinstance(entry, str) or not entry.strip() or "\0" in entry:
        raise BadInput(f"{path}: sandbox.hide entries must be non-empty path strings")
    if not (entry.startswith("~/") or entry.startswith("/")):
        raise BadInput(f"{path}: sandbox.hide {entry!r}: write a path under your home as ~/… or an absolute path")
    parts = [p for p in entry.removeprefix("~/").split("/") if p]
    if not parts or ".." in parts:
        raise BadInput(f"{path}: sandbox.hide {entry!r}: name one file or folder (not ~ or /, no '..')")
    return entry


def parse_sandbox(value: object, path: Path) -> SandboxLists:
    """The `sandbox` object of config.json; BadInput (exit 2) naming `path` and the entry for
    an unknown key, a non-list, an entry that is not `~/…` or absolute (or names `~`, `/` or
    has `..`), a `hide` entry that overlaps an agent CLI's own state (it could not be hidden),
    or an `unhide` entry that is not in the packaged list."""
    from automaton.core.secrets import CREDENTIAL_STORES

    if not isinstance(value, dict):
        raise BadInput(f"{path}: 'sandbox' must be an object with 'hide' and/or 'unhide' lists")
    unknown = sorted(set(value) - {"hide", "unhide"})
    if unknown:
        raise BadInput(f"{path}: sandbox: unknown key(s) {', '.join(unknown)}: only 'hide' and 'unhide'")
    hide, unhide = value.get("hide", []), value.get("unhide", [])
    if not isinstance(hide, list) or not isinstance(unhide, list):
        raise BadInput(f"{path}: sandbox.hide and sandbox.unhide must be lists of path strings")
    for entry in unhide:
        if entry not in CREDENTIAL_STORES:
            raise BadInput(f"{path}: sandbox.unhide {entry!r} is not in the packaged list of credential stores;"
                           " automaton --doctor lists them")
    out = SandboxLists(tuple(_hide_entry(e, path) for e in hide), tuple(unhide))
    if out.hide:
        _no_agent_state(out.hide, path)
    return out


def _no_agent_state(hide: tuple[str, ...], path: Path) -> None:
    """BadInput (exit 2) for a `sandbox.hide` entry that holds or lies inside a path an agent
    CLI writes (`sandbox.agents.STATE`): the kernel cannot hide it and grant the write, and
    every agent would be refused its sandbox."""
    from automaton.sandbox.agents import STATE  # only with a hide list: the hook's imports stay small

    home = Path.home()
    state = [home / rel for folders, files in STATE.values() for rel in (*folders, *files)]
    for entry in hide:
        where = home / entry[2:] if entry.startswith("~/") else Path(entry)
        clash = next((s for s in state if s == where or where in s.parents or s in where.parents), None)
        if clash is not None:
            raise BadInput(f"{path}: sandbox.hide {entry!r} overlaps {clash}, which an agent CLI must write:"
                           " name a narrower path")


def sandbox_lists(project: Project) -> SandboxLists:
    """`sandbox` of the sealed config.json; empty lists when there is neither a file nor a
    seal. BadInput / ConfigNotSealed exactly as `scope_overrides`."""
    obj = _sealed_object(project)
    return parse_sandbox(obj["sandbox"], project.config_file) if "sandbox" in obj else SandboxLists()


def _sealed_object(project: Project) -> dict[str, object]:
    """The sealed config.json as a JSON object ({} when there is neither a file nor a seal):
    its own error first (BadInput: it says what to fix before approving), then ConfigNotSealed
    when the file is not the sealed one (see `problem`)."""
    seal = read_seal(project)
    obj: dict[str, object] = {}
    if seal.current is not None:
        parse(seal.current, project.config_file)  # every section checked: an object of known keys
        obj = jsontext.loads(seal.current.decode("utf-8"))
    why = problem(project, seal)
    if why is not None:
        raise ConfigNotSealed(why)
    return obj


def scope_overrides(project: Project) -> dict[str, list[str]]:
    """Phase -> patterns from the sealed `.automaton/config.json`; {} when there is neither a
    file nor a seal. BadInput naming the file for an unreadable or invalid file (its own error
    first: it says what to fix before approving); ConfigNotSealed (a BadInput) when the file
    is not the sealed one (see `problem`)."""
    seal = read_seal(project)
    out = parse(seal.current, project.config_file) if seal.current is not None else {}
    why = problem(project, seal)
    if why is not None:
        raise ConfigNotSealed(why)
    return out


def isolation(project: Project) -> str:
    """The sealed config.json's "isolation" (default "namespaces"). BadInput and
    ConfigNotSealed as `scope_overrides`."""
    return str(_sealed_object(project).get("isolation", ISOLATION_MODES[0]))


@record(frozen=True)
class Sessions:
    """How agent sessions are held, from the sealed config.json: `mode` "sandboxed" or
    "hooks-only"; `explicit` False when config.json has no "sessions" key (read as
    "hooks-only"); `isolation` the sealed "isolation" (what the sandbox has beneath Landlock)."""

    mode: str
    explicit: bool
    isolation: str


def sessions(project: Project) -> Sessions:
    """The sealed config.json's "sessions" (and "isolation"), read once. BadInput and
    ConfigNotSealed as `scope_overrides`."""
    obj = _sealed_object(project)
    mode = obj.get("sessions")
    return Sessions(str(mode or SESSION_MODES[1]), mode is not None,
                    str(obj.get("isolation", ISOLATION_MODES[0])))


def sessions_label(rules: Sessions) -> str:
    """How agent sessions are held, as one line for `--doctor`, `--audit` and the dashboard:
    "sandboxed: …", or BEST_EFFORT with whether a human sealed it or it is only the default."""
    if rules.mode == "sandboxed":
        return ("sandboxed: an agent session's writing tool calls are denied unless it runs in the kernel sandbox"
                " (automaton --sandbox -- <agent>)")
    if rules.explicit:
        return f'{BEST_EFFORT}; "sessions": "hooks-only" sealed in .automaton/config.json'
    return (f'{BEST_EFFORT}; .automaton/config.json has no "sessions" key: a human runs automaton --install-hooks'
            ' <agent> to record "sessions": "sandboxed" where the kernel sandbox works')


def sealed_copy(project: Project, seal: Seal) -> bytes | None:
    """The kept copy of the sealed config.json when it is the file `seal` names; None when it
    is missing, unreadable or another file (projects sealed before copies were kept)."""
    try:
        data = project.sealed_config.read_bytes()
    except OSError:
        return None
    return data if seal.sealed is not None and token_of(data) == seal.sealed else None


def record_seal(project: Project, seen: str, fields: dict[str, object]) -> Seal:
    """Seal config.json as it is now (a human approved it); returns the new Seal.

    Under `.automaton/config.lock`: logs `CONFIG_APPROVED` with `fields` in config.log, whose
    `state` token is the file's SHA-256, and keeps the sealed copy; an approved removal logs
    `CONFIG_REMOVED` (token `absent`) and drops the copy. A broken log is moved aside to
    `config.log.broken[-n]` (evidence is kept) and a new chain starts: the human vouches for
    the file. Refused (exit 1) when the file or its seal is no longer what the human reviewed
    (`seen`, see Seal.seen); BadInput (exit 2) for an invalid file (never sealed).
    """
    from automaton.store.locks import locked

    project.sealed_config.parent.mkdir(parents=True, exist_ok=True)
    with locked(project.dot / LOCK):
        chainlog.recover(project.sealed_config, project.config_log, token_of)
        now = read_seal(project)
        if now.seen != seen:
            raise Refused(f"{project.config_file} or its seal changed while you reviewed it: nothing was"
                          f" sealed; run {APPROVE_CONFIG} again")
        if now.current is not None:
            parse(now.current, project.config_file)
        if now.broken:
            if os.path.lexists(project.config_log):  # (a deleted log reads as rolled back)
                fields = {**fields, "broken_log": _move_aside(project.config_log)}
            anchor.forget(project.config_log)  # the human's seal starts a new chain, anchored afresh
        chain = chainlog.read_chain(project.config_log)
        if now.current is None:
            chainlog.append_event(project.config_log, REMOVED, fields, ABSENT, chain)
            project.sealed_config.unlink(missing_ok=True)
        else:
            chainlog.commit(project.sealed_config, project.config_log, now.current, now.token, APPROVED,
                            fields, chain)
    return read_seal(project)


def _move_aside(path: Path) -> str:
    """Rename `path` to `<name>.broken[-n]` (never deleted); returns the new name."""
    aside, n = path.with_name(path.name + ".broken"), 1
    while os.path.lexists(aside):
        aside, n = path.with_name(f"{path.name}.broken-{n}"), n + 1
    os.replace(path, aside)
    return aside.name
