"""`--approve --config`: a human seals `.automaton/config.json` (the project's scope overrides).

The seal and its log live in store.project_config; this module is the human act: who approves,
what they are shown (a Review with the diff of the sealed copy), and that the seal is bound to
what they saw.
"""

from __future__ import annotations

import json
import os

from automaton.commands.excludes import exclude
from automaton.commands.human import require_human
from automaton.commands.reviews import Review, diff_lines
from automaton.core import jsontext
from automaton.core.errors import AutomatonError, Refused
from automaton.core.outcome import Outcome
from automaton.sandbox import available
from automaton.store import loops
from automaton.store import project_config as pc
from automaton.store.atomic import atomic_write
from automaton.store.layout import Project
from automaton.store.locks import Busy, locked

ACTION = "--approve --config"
# Runtime files of the seal: per checkout, like the focus (a clone's human approves once).
RUNTIME = (".automaton/config.log", ".automaton/config.lock", ".automaton/config.log.broken*",
           ".automaton/sealed/")


def _rel(project: Project, path: os.PathLike[str]) -> str:
    return os.path.relpath(path, project.root).replace(os.sep, "/")


def review_config(project: Project) -> Review:
    """What `--approve --config` would seal (read-only): `ask` is True when config.json is not
    the sealed one, with `lines` (why) and `diff` (the sealed copy against the file now, or
    "no sealed copy; showing the new file"); False when it already is (nothing to approve).
    Exit 1 without a human; exit 2 when config.json is unreadable or invalid (never sealed)."""
    require_human(ACTION)
    seal = pc.read_seal(project)
    if seal.current is not None:
        pc.parse(seal.current, project.config_file)  # BadInput: fix it before anyone approves it
    if seal.ok:
        return Review("config.json", seal.seen)
    base = pc.sealed_copy(project, seal)
    rel = _rel(project, project.config_file)
    diff = diff_lines(base, seal.current, _rel(project, project.sealed_config), rel)
    return Review("config.json", seal.seen, True, [f"{rel} {pc.describe(seal)}:", *diff], diff)


def approve_config(project: Project, reviewed: Review) -> Outcome:
    """Seal config.json as `reviewed` showed it (a human act): logged `CONFIG_APPROVED by=…`
    (or `CONFIG_REMOVED` for a removed file) in `.automaton/config.log`, its copy kept in
    `.automaton/sealed/config.json`, the seal's runtime files kept out of git. data: {"config":
    path, "sealed": bool, "sha256": hex | None (None: no file), "by", "diff"}. Exit 0 with
    nothing written when there is nothing to approve; exit 1 without a human, while a loop tick
    runs, or when the file or its seal changed since `reviewed`; exit 2 for an invalid file.
    """
    who = require_human(ACTION)
    path = project.config_file
    if not reviewed.ask:
        what = pc.describe(pc.read_seal(project))
        return Outcome(lines=[f"{_rel(project, path)} {what}: nothing to approve"],
                       data={"config": str(path), "sealed": False, "by": who, "diff": []})
    _between_ticks(project)
    seal = pc.record_seal(project, reviewed.seen, {"by": who})
    sha = seal.token.removeprefix("sha256:") if seal.current is not None else None

    exclude(project, RUNTIME, "# automaton project config seal of this checkout")
    line = (f"{_rel(project, path)}: sealed (approved by {who}; sha256 {sha[:12]})" if sha is not None
            else f"{_rel(project, path)}: its removal is sealed (approved by {who}); the built-in scopes apply")
    return Outcome(lines=[line], data={"config": str(path), "sealed": True, "sha256": sha, "by": who,
                                       "diff": reviewed.diff})


def _between_ticks(project: Project) -> None:
    """Refused (exit 1) while a tick of any loop holds its lock: code a tick runs (the agent,
    or what its verify step runs) must not seal a config that widens its own scope."""
    for loop in loops.list_loops(project):
        lock = loops.tick_lock_path(project, loop)
        if not lock.exists():
            continue  # no tick ever ran: nothing to wait for (and no lock file made here)
        try:
            with locked(lock, timeout_s=0):
                pass
        except Busy:
            raise Refused(f"a tick of loop {loop} is running: {ACTION} only between ticks (wait for it to"
                          " finish, or stop it, then run the command again)") from None


INSTALL_HOOKS = "--install-hooks"


def sessions_mode() -> tuple[str, str]:
    """("sandboxed", what confines) where this machine has the kernel sandbox with its namespace
    layer (`sandbox.available()`: ok and isolated), else ("hooks-only", why not)."""
    found = available()
    if found.ok and found.isolated:
        return "sandboxed", f"{found.detail}; {found.isolation_detail}"
    return "hooks-only", found.detail if not found.ok else found.isolation_detail


def record_sessions(project: Project) -> Outcome:
    """`--install-hooks AGENT` records `"sessions"` in `.automaton/config.json` and seals it
    (a human act, like `--approve --config`, logged `CONFIG_APPROVED by=… via=install_hooks`):
    "sandboxed" where `sessions_mode` finds the kernel sandbox, else "hooks-only" with a line
    saying why. A "sessions" key already sealed is kept (a human chose it). Nothing is written,
    and a warning says why, when config.json is not the sealed one or is invalid, when no human
    runs the command (`require_human`), or while a tick runs. data: {"sessions": mode | None
    (None: not recorded), "recorded": bool, "why": str}."""
    rel = _rel(project, project.config_file)
    try:
        seal = pc.read_seal(project)
        obj = jsontext.loads(seal.current.decode("utf-8")) if seal.current is not None else {}
        if seal.current is not None:
            pc.parse(seal.current, project.config_file)
    except (AutomatonError, ValueError) as exc:
        return _not_recorded(f"{rel} cannot be read ({getattr(exc, 'message', exc)})")
    why = pc.problem(project, seal)
    if why is not None:
        return _not_recorded(why)
    if "sessions" in obj:
        mode = str(obj["sessions"])
        return Outcome(lines=[f'sessions: "{mode}" (kept: sealed in {rel})'],
                       data={"sessions": mode, "recorded": False, "why": "already sealed"})
    mode, detail = sessions_mode()
    try:
        who = require_human(INSTALL_HOOKS)
        _between_ticks(project)
    except Refused as exc:
        return _not_recorded(exc.message)
    data = (json.dumps({"schema_version": pc.SCHEMA_VERSION, **obj, "sessions": mode}, indent=2) + "\n").encode()

    project.config_file.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(project.config_file, data)
    try:
        pc.record_seal(project, pc.Seal(data, seal.sealed).seen, {"by": who, "via": "install_hooks"})
    except AutomatonError:
        _put_back(project, seal.current)  # never leave an unsealed config.json (every hook call would deny)
        raise

    exclude(project, RUNTIME, "# automaton project config seal of this checkout")
    line = f'sessions: "{mode}" recorded in {rel} and sealed (approved by {who})'
    note = (f"an agent session writes only when started as automaton --sandbox -- <agent>, or automaton <agent>"
            f" for short ({detail})"
            if mode == "sandboxed" else
            f"no kernel sandbox for sessions here ({detail}): the hooks alone judge each call (best effort)")
    return Outcome(lines=[line, f"sessions: {note}"], data={"sessions": mode, "recorded": True, "why": note})


def _put_back(project: Project, old: bytes | None) -> None:
    if old is None:
        project.config_file.unlink(missing_ok=True)
    else:
        atomic_write(project.config_file, old)


def _not_recorded(why: str) -> Outcome:
    return Outcome(warnings=[f'sessions: not recorded in .automaton/config.json ({why}); a human runs'
                             f' automaton {INSTALL_HOOKS} again from a terminal'],
                   data={"sessions": None, "recorded": False, "why": why})
