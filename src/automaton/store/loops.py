"""Loop folders on disk: `.state.loop` (fail closed, tamper-checked), its chained log, loop.json.

Layout (docs/architecture.md#loop-files): `.automaton/loops/<name>/` holds loop.json, `.state.loop`,
`.state.log`, `.state.lock` (short read-modify-write lock), `.lock` (held for a whole tick),
`worktree/`, `runs/`. Invariants: only automaton writes `.state.loop`; each write appends one
chained log line whose `state=sha256:<hex>` token is the SHA-256 of the bytes written and which
also carries the counters (`iterations`, `spent_usd`, `iterations_at_approval`,
`spent_usd_at_approval`, `resumed`), so the log can rebuild them; counters never decrease, with
one bounded exception: a tick reserves `max_tick_usd` up front (`TICK_START n=… reserved_usd=…`)
and its closing `TICK n=…` line may give back at most that reservation (a `TICK_DEFERRED n=…`
line, a tick put off by a usage limit, also its one iteration: `store.looplog`). Every read checks the
log against itself and the state (`log_finding`): a counter that goes down, a state below its
log, or an event this code never writes is tampering.

A loop's name is looked up once (`Loop.resolve`: valid, a folder, tracked); the `Loop` it
returns carries the paths and the readers, and is what a tick and the loop commands pass down.
The module functions that take `(project, name)` resolve on every call, for callers that hold
no handle.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager  # store.locks loads it anyway
from dataclasses import dataclass, replace
from pathlib import Path

from automaton.core.chain import ChainCheck
from automaton.core.digest import sha256_hex
from automaton.core.errors import BadInput, CorruptState, Refused, one_line
from automaton.core.loopconfig import (
    DEATHS,
    LOOP_DIR,
    LoopConfig,
    loads_strict,
    parse_config,
    state_json,
    validate_state,
)
from automaton.core.loopstate import Event, LogEvent, LoopState
from automaton.core.names import NAME_RE, LoopName, TaskRef
from automaton.store import anchor, chainlog
from automaton.store.atomic import append_line, atomic_write, read_all, read_regular
from automaton.store.config import loop_defaults
from automaton.store.layout import Project
from automaton.store.locks import locked
from automaton.store.looplog import COUNTERS as COUNTERS  # re-exported: the log ledger lives in store.looplog
from automaton.store.looplog import EVENTS as EVENTS
from automaton.store.looplog import counters, log_finding, rebuilt_state, state_below_log
from automaton.store.looplog import untampered_counters as untampered_counters

# Annotations only: `--loop-list`, `--check-gate` and a tick that gives up import this module,
# and none of them needs typing or collections.abc at run time.
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from contextlib import AbstractContextManager

    Step = Callable[[LoopState], tuple[LoopState, LogEvent]]  # a core.loopstate transition, facts bound

STATE_FILE = ".state.loop"
LOG_FILE = ".state.log"
TICK_LOCK = ".lock"
STATE_LOCK = ".state.lock"
CONFIG_FILE = "loop.json"
RUNS_DIR = "runs"  # runs/<n>/: what each tick left (prompts, transcripts, verdict, cost)
SEALED_COPY = "sealed/loop.json"  # the last sealed loop.json, kept to show a human what changed
UNTRACKED_HINT = "Run --upgrade-loops to bootstrap"  # a stable text: docs/architecture.md#stable-interfaces
# `.automaton/loops/.archive/<name>-<UTC>/`: what `--remove-loop` keeps of a removed loop. Never a
# loop (a loop name cannot start with a dot), so no listing, gate or audit sees it as one.
ARCHIVE_DIR = ".archive"
# A halt a tick could not write (a full disk: `runner.iohalt`); the next tick records it first.
IO_PENDING = "io_error.pending"
IO_DETAIL_MAX = 400  # characters of its detail kept
IO_UNKNOWN = ("io_error: a tick met a full disk or a write it was refused and could not record its halt"
              " then; check the free space, then automaton --approve")


def untracked_hint(loop: str) -> str:
    """The stable hint (UNTRACKED_HINT): `automaton --upgrade-loops --loop NAME` (a human act), or
    the folder removed and the loop created again."""
    return (f"{UNTRACKED_HINT} (automaton --upgrade-loops --loop {loop}, a human act; or remove the folder"
            f" .automaton/loops/{loop}/ and run automaton --create-loop {loop} again)")


def not_a_folder(project: Project, loop: str) -> str | None:
    """One line when something other than a folder sits where the loop folder should be."""
    folder = project.loop_dir(LoopName(loop))
    if os.path.lexists(folder) and not folder.is_dir():
        kind = "a file" if folder.is_file() else "a dangling symlink" if os.path.islink(folder) else "not a folder"
        return (f"{folder} is {kind} where the folder of loop {loop!r} should be: it is not a loop;"
                f" a human removes it (then automaton --create-loop {loop} --template …)")
    return None


class StateTampered(Refused):
    """`.state.loop` disagrees with its log: it was written outside automaton (exit 1)."""


def state_token(data: bytes) -> str:
    """The log token of `.state.loop` bytes: `sha256:<hex>`."""
    return "sha256:" + sha256_hex(data)


def encode_state(state: LoopState) -> bytes:
    """The bytes of `.state.loop` for `state` (the format every release writes: indented JSON, newline)."""
    return (json.dumps(state_json(state), indent=2, allow_nan=False) + "\n").encode("utf-8")


@dataclass(frozen=True)
class Loop:
    """A tracked loop, resolved once and passed down instead of `(project, name)`.

    A tick (`runner.tick.tick`) and each loop command resolve the name at their edge
    (`Loop.resolve`), then hand this value to every step: the name is validated and the folder
    found tracked once, not again by each step. The paths are derived from `dir`; the readers
    read the files on every call and cache nothing, since a brake must see each file as it is
    at the moment it is read (a loop.json changed mid-tick is still caught by the next read).
    """

    project: Project
    name: LoopName
    dir: Path

    @classmethod
    def resolve(cls, project: Project, name: str) -> Loop:
        """The tracked loop `name` (one with `.state.loop`, or with the log it was deleted from).

        BadInput for an invalid name, no folder, something other than a folder in its place,
        or an untracked folder; CorruptState for a `.state.loop` that is not a regular file."""
        loop = LoopName.of(name)
        folder = project.loop_dir(loop)
        # One `stat` each for the folder and the state in the usual case (a tracked loop): the
        # closer looks below run only when one of them is not what it should be. Every tick,
        # gate and listed loop resolves here.
        if not folder.is_dir():
            stray = not_a_folder(project, loop)
            if stray is not None:
                raise BadInput(stray)
            from automaton.core.names import did_you_mean, folder_names

            hint = did_you_mean(loop, [n for n in folder_names(project.loops_dir) if n != ARCHIVE_DIR])
            raise BadInput(f"unknown loop {loop!r}{hint} (no folder {folder}); automaton --loop-list lists them,"
                           " automaton --create-loop makes one")
        state = folder / STATE_FILE
        if not state.is_file():
            if os.path.lexists(state):  # a directory, a dangling or looping link
                raise CorruptState(f"{state}: not a regular file; it was not written by automaton (counters are"
                                   f" never reset): remove it, then a human restores it from its log with"
                                   f" automaton --approve --loop {loop}")
            if not os.path.lexists(folder / LOG_FILE):
                # Only a folder with neither file is untracked: a log without its state is a
                # deletion (tampering, rebuilt from the log by a human approval), never a fresh start.
                raise BadInput(f"loop {loop!r} is UNTRACKED (no {STATE_FILE}, no {LOG_FILE}): {untracked_hint(loop)}")
        return cls(project, loop, folder)

    # ---- paths (docs/architecture.md#loop-files) ----

    @property
    def state_file(self) -> Path:
        return self.dir / STATE_FILE

    @property
    def log_file(self) -> Path:
        return self.dir / LOG_FILE

    @property
    def state_lock(self) -> Path:
        return self.dir / STATE_LOCK

    @property
    def tick_lock(self) -> Path:
        return self.dir / TICK_LOCK

    @property
    def config_file(self) -> Path:
        return self.dir / CONFIG_FILE

    @property
    def runs(self) -> Path:
        return self.dir / RUNS_DIR

    def run_dir(self, n: int) -> Path:
        """`runs/<n>/`, the folder of tick `n`."""
        return self.runs / str(n)

    @property
    def worktree(self) -> Path:
        """Where the loop's worktree belongs (the state's `worktree_path` says where it is)."""
        return self.project.worktree_dir(self.name)

    # ---- loop.json and its seal ----

    def read_config(self) -> LoopConfig:
        """loop.json, validated on every read (fail closed: BadInput naming the file and key)."""
        path = self.config_file
        try:
            data = read_all(path)  # os.open/os.read: half of what open() costs, once per loop listed
        except OSError as exc:
            raise BadInput(f"{path}: cannot read ({exc.strerror}); restore it or re-create the loop") from None
        config = parse_config_bytes(data, str(path))
        if config.name != self.name:
            raise BadInput(f"{path}: name {config.name!r} does not match the loop folder {self.name!r}")
        return with_loop_dir(config, self.dir)

    def config_sha256(self) -> str:
        return config_sha256(self.project, self.name)

    def config_bytes(self) -> bytes | None:
        return config_bytes(self.project, self.name)

    def sealed_copy(self) -> bytes | None:
        return sealed_copy(self.project, self.name)

    def keep_sealed_copy(self, sha256: str) -> bool:
        return keep_sealed_copy(self.project, self.name, sha256)

    def bound_tasks(self, state: LoopState) -> list[str]:
        """The task(s) the loop works on: loop.json `task` (when loop.json is valid) and the
        state's `current_task`, de-duplicated, loop.json's first. A loop is bound to both: the
        one the human configured and the one its state recorded (fail safe for `halted_owners`)."""
        try:
            cfg_task = self.read_config().task
        except BadInput:
            cfg_task = None
        return bound_task_names(cfg_task, state)

    # ---- state and log ----

    def inspect(self) -> LoopRecord:
        """State and log, tamper finding included (CorruptState for an unreadable state)."""
        found = _load(self.project, self.name, under_lock=False, folder=self.dir)
        if found is not None:
            return found
        with locked(self.state_lock):  # a writer was mid-commit: settle it
            found = _load(self.project, self.name, under_lock=True, folder=self.dir)
        assert found is not None
        return found

    def read_state(self) -> LoopState:
        """The validated state; CorruptState (exit 2) naming the file; StateTampered (exit 1)."""
        rec = self.inspect()
        if rec.tamper:
            raise StateTampered(f"{rec.tamper}; a human clears it with: automaton --approve --loop {rec.name}")
        return rec.state

    @contextmanager
    def session(self, *, rebuild: bool = False) -> Iterator[Session]:
        """Hold the state lock and yield the freshly read record (interrupted commits finished).

        `rebuild` (a human's approval only): an unreadable state with an intact log comes back
        as a tampered record whose state is rebuilt from the log (`rebuilt_state`), instead of
        CorruptState."""
        with locked(self.state_lock):
            rec = _load(self.project, self.name, under_lock=True, rebuild=rebuild, folder=self.dir)
            assert rec is not None
            yield Session(rec)

    def update_state(self, step: Step) -> LoopState:
        """ONE locked read-modify-write plus its chained log line; returns the new state.

        `step` is a transition (`core.loopstate`) with its facts bound: it gets the state read
        under the lock and returns the new state and the LogEvent to append. Raises
        StateTampered for a tampered state, CorruptState for an unreadable one, ValueError (a
        bug) as `Session.commit` does.
        """
        with self.session() as s:
            if s.rec.tamper:
                raise StateTampered(f"{s.rec.tamper}; a human clears it with: automaton --approve --loop {s.rec.name}")
            return s.commit(*step(s.rec.state))

    def pending_io_halt(self) -> str | None:
        """The halt an earlier tick met a full disk or a refused write with and could not
        record (`IO_PENDING`, left by `runner.iohalt`): its one-line detail `io_error: …`
        (IO_UNKNOWN for an empty or foreign marker), None when none is pending. Read-only:
        the next tick records it (halted human_intervention) and does not run."""
        path = self.dir / IO_PENDING
        if not os.path.lexists(path):
            return None
        said = (read_regular(path, IO_DETAIL_MAX) or b"").decode("utf-8", errors="replace").strip()
        return one_line(said) if said.startswith("io_error: ") else IO_UNKNOWN

    def log_event(self, event: LogEvent) -> None:
        """A chained log line that leaves the state unchanged (e.g. `SKIPPED reason=busy`, `WARNING`)."""
        with self.session() as s:
            s.log(event)


def require_tracked(project: Project, name: str) -> LoopName:
    """The validated name of a tracked loop; BadInput otherwise (`Loop.resolve`, which checks it)."""
    return Loop.resolve(project, name).name


def state_files(folder: Path) -> list[str]:
    """Which of a loop folder's `.state.loop` and `.state.log` are there (as any kind of
    entry): none is an untracked folder; a log alone is a deletion, never a fresh start."""
    return [f for f in (STATE_FILE, LOG_FILE) if os.path.lexists(folder / f)]


def list_loops(project: Project) -> list[LoopName]:
    """Every loop folder (tracked or not) with a valid name, sorted (never ARCHIVE_DIR). [] when `.automaton/loops/`
    does not exist or is a file (no loop can live there; the audit reports it); CorruptState
    (exit 2) when it exists but cannot be listed (fail closed: an unreadable folder may hold a
    halted loop that owns a task)."""
    try:
        entries = sorted(project.loops_dir.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise CorruptState(f"{project.loops_dir}: cannot list loops ({exc.strerror}); fix permissions") from None
    return [LoopName(p.name) for p in entries
            if p.is_dir() and NAME_RE.match(p.name) and p.name not in ("complete", ARCHIVE_DIR)]


def stray_entries(project: Project) -> list[LoopName]:
    """Valid loop names under `.automaton/loops/` that are not folders (a file, a dangling link), sorted."""
    try:
        entries = sorted(project.loops_dir.iterdir())
    except OSError:
        return []
    return [LoopName(p.name) for p in entries if NAME_RE.match(p.name) and p.name not in ("complete", ARCHIVE_DIR)
            and not_a_folder(project, p.name) is not None]


def tick_lock_path(project: Project, name: str) -> Path:
    return project.loop_dir(LoopName.of(name)) / TICK_LOCK


def config_sha256(project: Project, name: LoopName) -> str:
    """SHA-256 hex of loop.json now; "" when it is missing or unreadable (never equal to a seal)."""
    try:
        return sha256_hex(read_all(project.loop_dir(name) / CONFIG_FILE))
    except OSError:
        return ""


def config_bytes(project: Project, name: LoopName) -> bytes | None:
    """loop.json's bytes now; None when it is missing or unreadable."""
    try:
        return read_all(project.loop_dir(name) / CONFIG_FILE)
    except OSError:
        return None


def sealed_copy(project: Project, name: LoopName) -> bytes | None:
    """The kept copy of the last sealed loop.json (`sealed/loop.json`); None when it is missing
    or unreadable (loops sealed before copies were kept). The seal itself stays
    `config_sha256` in `.state.loop`: the caller checks the copy against it."""
    try:
        return (project.loop_dir(name) / SEALED_COPY).read_bytes()
    except OSError:
        return None


def keep_sealed_copy(project: Project, name: LoopName, sha256: str) -> bool:
    """Copy loop.json to `sealed/loop.json` when its bytes hash to `sha256` (the seal just
    recorded); False, with nothing written, when loop.json changed meanwhile (the old copy then
    no longer matches the seal, and is not shown as the sealed one)."""
    data = config_bytes(project, name)
    if data is None or sha256_hex(data) != sha256:
        return False
    target = project.loop_dir(name) / SEALED_COPY
    target.parent.mkdir(exist_ok=True)
    atomic_write(target, data)
    return True


def parse_config_bytes(data: bytes, source: str) -> LoopConfig:
    """Validate loop.json bytes (BadInput naming `source` and the key)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{source}: not UTF-8 text") from None
    return parse_config(loads_strict(text, source), source, loop_defaults(), sha256_hex(data))


def with_loop_dir(config: LoopConfig, folder: Path) -> LoopConfig:
    """`config` with every `{loop_dir}` in the verify command's arguments replaced by `folder`
    (the loop folder, absolute, where this machine keeps it). loop.json names the packaged
    scorer as `{loop_dir}/scorer.py`, so the sealed bytes hold no path of the machine that
    created the loop: a state remote's runner in a fresh clone runs its own copy."""
    command = config.roles.verify.command
    if not command or not any(LOOP_DIR in arg for arg in command):
        return config
    verify = replace(config.roles.verify, command=[arg.replace(LOOP_DIR, str(folder)) for arg in command])
    return replace(config, roles=replace(config.roles, verify=verify))


def read_config(project: Project, name: str) -> LoopConfig:
    """loop.json of a tracked loop, validated on every read (fail closed): `Loop.read_config`."""
    return Loop.resolve(project, name).read_config()


@dataclass
class LoopRecord:
    """A loop's state as found. `tamper` is empty when `.state.loop` is the one its log sealed."""

    name: LoopName
    dir: Path
    state: LoopState
    chain: ChainCheck
    tamper: str = ""
    rebuilt: bool = False  # `state` was rebuilt from the log (the file is missing or unreadable)

    @property
    def state_file(self) -> Path:
        return self.dir / STATE_FILE

    @property
    def log_file(self) -> Path:
        return self.dir / LOG_FILE


def _token_of(data: bytes) -> str | None:
    return state_token(data)


def _next_step(loop: LoopName, chain: ChainCheck) -> str:
    if chain.ok and chain.lines:
        return f"; a human restores it from its intact log with: automaton --approve --loop {loop}"
    return f"; its {LOG_FILE} is not intact either: restore both from a backup"


def _load(project: Project, loop: LoopName, *, under_lock: bool, rebuild: bool = False,
          folder: Path | None = None) -> LoopRecord | None:
    """Read state + log. Without the lock, None means "looks mid-commit: re-read under the lock".

    A deleted `.state.loop` whose log exists is tampering: the record carries a state rebuilt
    from the log. An unreadable state raises CorruptState, or with `rebuild` (a human's
    approval) and an intact log is rebuilt the same way. `folder`: the loop's folder when the
    caller holds it (a resolved `Loop`), else derived from `project` and `loop`.
    """
    folder = project.loop_dir(loop) if folder is None else folder
    state_file, log_file = folder / STATE_FILE, folder / LOG_FILE
    if under_lock:
        chainlog.recover(state_file, log_file, _token_of)
    chain = chainlog.read_chain(log_file)
    try:
        data = read_all(state_file)
    except FileNotFoundError:
        if not under_lock:
            return None
        if not os.path.lexists(log_file):
            raise BadInput(f"loop {loop!r} is UNTRACKED (no {STATE_FILE}, no {LOG_FILE}):"
                           f" {untracked_hint(loop)}") from None
        return LoopRecord(loop, folder, rebuilt_state(loop, chain.lines, folder), chain,
                          f"{state_file} was deleted but its log exists (state deleted)", rebuilt=True)
    except OSError as exc:
        raise CorruptState(f"{state_file}: cannot read ({exc.strerror}); fix permissions") from None
    tamper = ""
    if not chain.ok:
        tamper = f"{log_file}: {chain.error}"
    elif not chain.lines:
        tamper = f"{state_file} has no {LOG_FILE}: it was written outside automaton"
    elif chain.last_state != state_token(data):
        if not under_lock:
            return None
        tamper = f"{state_file} is not the state its log sealed (sha256 differs): it was edited outside automaton"
    try:
        state = _parse_state(data, state_file, loop)
    except CorruptState as exc:
        if rebuild and chain.ok and chain.lines:
            return LoopRecord(loop, folder, rebuilt_state(loop, chain.lines, folder), chain, exc.message,
                              rebuilt=True)
        raise CorruptState(exc.message + _next_step(loop, chain)) from None
    if not tamper:
        tamper = log_finding(chain.lines, log_file) or state_below_log(state, chain.lines, state_file)
    return LoopRecord(loop, folder, state, chain, tamper)


def _parse_state(data: bytes, state_file: Path, loop: LoopName) -> LoopState:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptState(f"{state_file}: not UTF-8 text; it was written outside automaton") from None
    if not text.strip():
        raise CorruptState(f"{state_file}: empty; it was written outside automaton (counters are never reset)")
    state = validate_state(loads_strict(text, str(state_file), CorruptState), str(state_file))
    if state.name != loop:
        raise CorruptState(f"{state_file}: name {state.name!r} does not match the loop folder {loop!r}")
    return state


def inspect(project: Project, name: str) -> LoopRecord:
    """Read a tracked loop, tamper finding included: `Loop.inspect`."""
    return Loop.resolve(project, name).inspect()


def read_state(project: Project, name: str) -> LoopState:
    """The validated state of a tracked loop: `Loop.read_state`."""
    return Loop.resolve(project, name).read_state()


def _fields(state: LoopState, fields: Mapping[str, object]) -> dict[str, object]:
    out = dict(fields)
    out.update({COUNTERS[key]: value for key, value in counters(state).items()})
    return out


def _lowered(old: LoopState, new: LoopState, event: LogEvent) -> str | None:
    """Why `new` lowers a counter of `old` beyond what `event` gives back (None when it does not)."""
    pairs = (("iteration_count", old.iteration_count, new.iteration_count, event.refund_iterations),
             ("spent_usd", old.spent_micro_usd, new.spent_micro_usd, event.refund_micro_usd),
             ("resumed_count", old.resumed_count, new.resumed_count, 0),
             ("iterations_at_approval", old.iterations_at_approval, new.iterations_at_approval, 0),
             ("spent_usd_at_approval", old.spent_micro_usd_at_approval, new.spent_micro_usd_at_approval, 0))
    for key, before, after, slack in pairs:
        if after < before - slack:
            return f"{key} may not decrease ({before} -> {after}): counters are never reset"
    return None


class Session:
    """One locked read-modify-write of a loop (see `session`)."""

    def __init__(self, rec: LoopRecord) -> None:
        self.rec = rec

    def commit(self, new: LoopState, event: LogEvent) -> LoopState:
        """Write `new` and log `event` (with the counters) as one crash-safe unit; returns `new`.

        `event.refund_micro_usd` (only on the `TICK` or `TICK_DEFERRED` that closes a
        `TICK_START` reservation): how far spent may go down; `event.refund_iterations` (0 or 1,
        only on a `TICK_DEFERRED`): how far iteration_count may. ValueError (a bug) for a
        lowered counter, a changed name or schema_version, or a state that breaks an invariant
        (`LoopState.problem`).
        """
        old = self.rec.state
        if new.name != old.name or new.schema_version != old.schema_version:
            raise ValueError("a loop's name and schema_version never change")
        if event.refund_micro_usd and event.event not in (Event.TICK, Event.TICK_DEFERRED):
            raise ValueError("only a TICK or TICK_DEFERRED gives back its reservation")
        if event.refund_micro_usd < 0 or event.refund_iterations not in (0, 1) or (
                event.refund_iterations and event.event is not Event.TICK_DEFERRED):
            raise ValueError("only a TICK_DEFERRED gives back its one iteration")
        why = _lowered(old, new, event) or _invalid(new)
        if why is not None:
            raise ValueError(f"refusing to write loop {self.rec.name}'s state: {why}")
        data = encode_state(new)
        chainlog.commit(self.rec.state_file, self.rec.log_file, data, state_token(data), event.event.value,
                        _fields(new, event.fields), self.rec.chain)
        self.rec = LoopRecord(self.rec.name, self.rec.dir, new, chainlog.read_chain(self.rec.log_file))
        return new

    def log(self, event: LogEvent) -> None:
        """A chained line that leaves the state as the log last sealed it (never the file's token)."""
        token = self.rec.chain.last_state or "none"
        chainlog.append_event(self.rec.log_file, event.event.value, dict(event.fields), token, self.rec.chain)
        self.rec.chain = chainlog.read_chain(self.rec.log_file)

    def reseal_tampered(self, step: Step) -> LoopState:
        """Write a state for a tampered loop without trusting its counters (see `untampered_counters`)
        or its accepted_drift (emptied: a forged list could hide drift; a human re-accepts), then
        `step` applied to it (a halt, an approval).

        A broken chain is moved aside to `.state.log.broken[-n]` and a fresh chain starts here;
        an unreadable state file that was rebuilt from the log goes to `.state.loop.broken[-n]`.
        """
        rec = self.rec
        # A rolled-back log lost lines its anchor still remembers: their counters count too.
        lines = [*rec.chain.lines, *anchor.remembered(rec.log_file)] if rec.chain.rolled_back else rec.chain.lines
        new, event = step(replace(untampered_counters(rec.state, lines), accepted_drift=()))
        why = _invalid(new)
        if why is not None:
            raise ValueError(f"refusing to write loop {rec.name}'s state: {why}")
        fields = dict(event.fields)
        if rec.rebuilt and os.path.lexists(rec.state_file):
            fields = {**fields, "broken_state": _move_aside(rec.state_file)}
        if not rec.chain.ok:
            if os.path.lexists(rec.log_file):  # (a deleted log reads as rolled back: nothing to keep)
                fields = {**fields, "broken_log": _move_aside(rec.log_file)}
            anchor.forget(rec.log_file)  # the re-seal starts a new chain, anchored afresh
        data = encode_state(new)
        chain = chainlog.read_chain(rec.log_file)
        chainlog.commit(rec.state_file, rec.log_file, data, state_token(data), event.event.value,
                        _fields(new, {**fields, "tamper": rec.tamper}), chain)
        self.rec = LoopRecord(rec.name, rec.dir, new, chainlog.read_chain(rec.log_file))
        return new


def resealed_finding(rec: LoopRecord) -> str:
    """`rec.tamper` as the halt that re-seals it tells it (`Session.reseal_tampered`, the gate's):
    a rolled-back log is moved aside there and a new log started, so there is no rollback left
    for `--accept-rollback` to accept, and the newer copy no longer fits. What clears that halt
    is a human's `--approve --loop`, which keeps the counters the restore undid: the one step
    named. Any other finding is `rec.tamper` as it is."""
    if not rec.chain.rolled_back:
        return rec.tamper
    command = anchor.accept_command(rec.log_file)
    found = rec.tamper
    for advice in (f"; {anchor.rollback_hint(rec.log_file)}",
                   f": restore it from a backup, or a human accepts the log as it is: {command}",
                   f": a human accepts the log as it is: {command}"):
        found = found.removesuffix(advice)
    kept = f" (the restored one moved to a {LOG_FILE}.broken file)" if os.path.lexists(rec.log_file) else ""
    return (f"{found}; the gate re-sealed the loop halted in a new log{kept}, still counting what the restore"
            f" undid: a human who meant the restore clears it with automaton --approve --loop {rec.name}")


def _move_aside(path: Path) -> str:
    """Rename `path` to `<name>.broken[-n]` (evidence is kept, never deleted); returns the new name."""
    aside, n = path.with_name(path.name + ".broken"), 1
    while os.path.lexists(aside):
        aside, n = path.with_name(f"{path.name}.broken-{n}"), n + 1
    os.replace(path, aside)
    return aside.name


def _invalid(state: LoopState) -> str | None:
    """Why `state` may not be written (a broken invariant), None when it may."""
    problem = state.problem()
    return None if problem is None else f"{problem[0]} must be {problem[1]}"


def session(project: Project, name: str, *, rebuild: bool = False) -> AbstractContextManager[Session]:
    """One locked read-modify-write of a tracked loop: `Loop.session`."""
    return Loop.resolve(project, name).session(rebuild=rebuild)


def update_state(project: Project, name: str, step: Step) -> LoopState:
    """`Loop.update_state` of a tracked loop."""
    return Loop.resolve(project, name).update_state(step)


def log_event(project: Project, name: str, event: LogEvent) -> None:
    """`Loop.log_event` of a tracked loop."""
    Loop.resolve(project, name).log_event(event)


def create(project: Project, loop: LoopName, files: dict[str, bytes], state: LoopState,
           fields: dict[str, object]) -> Path:
    """Make the loop folder (never an existing one), write `files`, then seal `state` with CREATED.

    BadInput when the folder exists; on any failure the new folder is removed again.
    """
    folder = project.loop_dir(loop)
    project.loops_dir.mkdir(parents=True, exist_ok=True)
    stray = not_a_folder(project, loop)
    if stray is not None:
        raise BadInput(stray)
    try:
        folder.mkdir()
    except FileExistsError:
        tracked = (folder / STATE_FILE).exists()
        raise BadInput(f"loop {loop!r} already exists at {folder}" + ("" if tracked else
                       " (untracked; nothing was changed)")) from None
    try:
        for rel, data in files.items():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, data)
        data = encode_state(state)
        with locked(folder / STATE_LOCK):
            chainlog.commit(folder / STATE_FILE, folder / LOG_FILE, data, state_token(data), Event.CREATED.value,
                            _fields(state, fields), chainlog.read_chain(folder / LOG_FILE))
    except BaseException:
        import shutil  # here: only a failed create removes a folder

        shutil.rmtree(folder, ignore_errors=True)  # nothing half-created
        raise
    return folder


def bootstrap(project: Project, loop: LoopName, config_data: bytes, state: LoopState,
              fields: dict[str, object]) -> Path:
    """Seal `state` with CREATED in the existing folder of an untracked loop (`--upgrade-loops`):
    `sealed/loop.json` gets `config_data` (the loop.json bytes whose sha256 `state` carries),
    then `.state.loop` and `.state.log` are written under the state lock.

    Refused (exit 1) when the folder has a `.state.loop` or a `.state.log` by then (a loop with
    state is never bootstrapped: its counters would start over); BadInput (exit 2) when the
    keyed anchor remembers a log at this path (a deleted log is a rollback, never a new loop:
    `--accept-rollback` is the human's way) or a write fails."""
    folder = project.loop_dir(loop)
    with locked(folder / STATE_LOCK):
        present = state_files(folder)
        if present:
            raise Refused(f"loop {loop!r} already has state ({', '.join(present)} in {folder}): nothing to"
                          " bootstrap; --upgrade-loops only seals a folder that has loop.json alone")
        chain = chainlog.read_chain(folder / LOG_FILE)
        if not chain.ok:
            raise BadInput(f"loop {loop!r}: {chain.error}")
        target = folder / SEALED_COPY
        target.parent.mkdir(exist_ok=True)
        atomic_write(target, config_data)
        data = encode_state(state)
        chainlog.commit(folder / STATE_FILE, folder / LOG_FILE, data, state_token(data), Event.CREATED.value,
                        _fields(state, fields), chain)
    return folder


def add_excludes(exclude_file: Path, patterns: list[str], header: str) -> list[str]:
    """Append the `patterns` missing from a git exclude file (one write per line); returns those added."""
    try:
        present = set(exclude_file.read_text(encoding="utf-8").splitlines())
    except FileNotFoundError:
        present = set()
    missing = [p for p in patterns if p not in present]
    if missing:
        exclude_file.parent.mkdir(parents=True, exist_ok=True)
        text = exclude_file.read_bytes() if exclude_file.exists() else b""
        if text and not text.endswith(b"\n"):
            append_line(exclude_file, "")
        for line in ([header] if header not in present else []) + missing:
            append_line(exclude_file, line)
    return missing


def bound_task_names(config_task: str | None, state: LoopState) -> list[str]:
    """`Loop.bound_tasks` from what its caller read: loop.json `task` (None when loop.json has none
    or is not valid) and the state's `current_task`, de-duplicated, loop.json's first."""
    return [task for i, task in enumerate((config_task, state.current_task))
            if task is not None and (i == 0 or task != config_task)]


def _same_task(task: str, ref: TaskRef) -> bool:
    try:
        return TaskRef.parse(task) == ref
    except BadInput:
        return False


def halted_owners(project: Project, ref: TaskRef) -> list[tuple[LoopName, str]]:
    """Loops bound to `ref` (loop.json `task` or `current_task`, see `Loop.bound_tasks`) whose status
    is `halted` with one of the five deaths: [(loop name, halt_reason)]; such a task refuses transitions. A loop
    whose state cannot be read raises CorruptState: fail closed, it might own the task. A
    tampered loop bound to `ref` raises StateTampered (exit 1): its file's status cannot be
    trusted (the next gate halts it)."""
    owners: list[tuple[LoopName, str]] = []
    for name in list_loops(project):
        try:
            loop = Loop.resolve(project, name)
            rec = loop.inspect()
        except CorruptState:
            raise
        except BadInput:
            continue  # untracked: not a loop automaton runs
        state = rec.state
        bound = any(_same_task(task, ref) for task in loop.bound_tasks(state))
        if bound and rec.tamper:
            raise StateTampered(f"task {ref} is bound to loop {name!r}, which is tampered ({rec.tamper});"
                                f" a human clears it with: automaton --approve --loop {name}")
        if bound and state.status == "halted" and state.halt_reason in DEATHS:
            owners.append((name, str(state.halt_reason)))
    return owners
