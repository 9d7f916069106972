"""Task folders on disk: read `.state` (fail closed), its chained log, artifacts and bindings."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from automaton.core.approvals import MISSING, parse_bind
from automaton.core.chain import ChainCheck
from automaton.core.errors import BadInput, CorruptState
from automaton.core.names import NAME_RE, TaskName, TaskRef
from automaton.core.phases import ARTIFACTS, is_phase
from automaton.store import chainlog
from automaton.store.atomic import tmp_path
from automaton.store.layout import COMPLETE_DIR, Project

STATE = ".state"
LOG = ".state.log"
LOCK = ".state.lock"
# Log events whose `bind` field (re)binds approved artifacts to their SHA-256.
BINDING_EVENTS = frozenset({"APPROVED", "RESEALED"})
UNREADABLE = "unreadable"


def phase_token(data: bytes) -> str | None:
    """The phase in `.state` bytes, or None when they are not exactly one known phase line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.endswith("\n") or text.count("\n") != 1:
        return None
    value = text[:-1].strip()
    return value if is_phase(value) else None


def read_phase(state_file: Path) -> str:
    """Read `.state`; raises CorruptState (exit 2) naming the file. Never defaults to `new`."""
    data = _read_bytes(state_file)
    if data is None:
        raise CorruptState(f"{state_file}: missing; create tasks with automaton --create-task")
    phase = phase_token(data)
    if phase is None:
        text = data[:80].decode("utf-8", "replace")
        shown = text.strip() or "empty"
        if is_phase(text.strip(" \t\n")):
            # A valid word in the wrong shape (no final newline, extra spaces, lines): automaton
            # always writes exactly "<phase>\n", so this was cut short or written by hand.
            what = f"{shown!r} is not in the exact form automaton writes (one line ending in a newline)"
        else:
            what = f"not a valid phase ({shown!r})"
        raise CorruptState(
            f"{state_file}: {what}; it was written outside automaton or cut short —"
            f" a human re-seals it with: automaton --approve --task {_ref_of(state_file.parent)} --to PHASE"
        )
    return phase


def _ref_of(folder: Path) -> str:
    """How a user addresses the task in `folder`: NAME, or PARENT/SUB for a sub-task."""
    up = folder.parent.name
    return folder.name if up in ("tasks", COMPLETE_DIR) else f"{up}/{folder.name}"


def sha256_file(path: Path) -> str:
    """SHA-256 hex of the file; MISSING when absent, UNREADABLE when not a readable file."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return MISSING
    except OSError:  # a directory or no permission: differs from any hash, so it demotes
        return UNREADABLE


@dataclass
class TaskRecord:
    """One task as found on disk. `phase` None = legacy folder (no `.state`, no log).

    `tamper` is empty when `.state` agrees with the last line of an intact `.state.log`;
    otherwise it says what disagrees (DESIGN §4 tamper evidence).
    """

    ref: TaskRef
    dir: Path
    phase: str | None
    chain: ChainCheck
    tamper: str = ""
    present: set[str] = field(default_factory=set)

    @property
    def state_file(self) -> Path:
        return self.dir / STATE

    @property
    def log_file(self) -> Path:
        return self.dir / LOG

    @property
    def legacy(self) -> bool:
        return self.phase is None and not self.tamper

    def bound(self) -> dict[str, str]:
        """artifact -> SHA-256 bound by approvals, from the log (later lines win)."""
        out: dict[str, str] = {}
        for line in self.chain.lines:
            if line.event in BINDING_EVENTS and "bind" in line.fields:
                out.update(parse_bind(line.fields["bind"]))
        return out

    def current_hashes(self) -> dict[str, str]:
        return {name: sha256_file(self.dir / name) for name in ARTIFACTS}

    def subtasks(self) -> list[Path]:
        """Sub-task folders: child folders with a `.state` or a `.state.log`."""
        if self.ref.parent is not None:
            return []
        return _subs(self.dir)


def present_artifacts(folder: Path) -> set[str]:
    """Artifact file names in `folder` (only the nine deliverables; metadata never counts)."""
    try:
        names = {p.name for p in folder.iterdir() if p.is_file()}
    except OSError:
        return set()
    return names & ARTIFACTS


def load(project: Project, ref: TaskRef, *, strict: bool = True) -> TaskRecord:
    """Read a task read-only. Raises BadInput for an unknown task, CorruptState for a bad `.state`
    (with `strict=False` a bad `.state` is reported in `tamper` instead, for the human re-seal)."""
    folder = project.task_dir(ref)
    if not folder.is_dir():
        raise BadInput(f"unknown task {str(ref)!r}: no folder {folder}; create it with automaton --create-task")
    return load_dir(ref, folder, strict=strict)


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise CorruptState(_directory(path)) from None
    except OSError as exc:
        raise CorruptState(f"{path}: cannot read ({exc.strerror}); fix its permissions") from None


def _directory(path: Path) -> str:
    return (f"{path}: a directory where automaton keeps a file (corrupt task state);"
            " a human removes it, then re-seals the task with"
            f" automaton --approve --task {_ref_of(path.parent)} --to PHASE")


def _no_directories(*paths: Path) -> None:
    """CorruptState (exit 2) naming the first of `paths` that is a directory: every state file
    of a task fails the same way, whichever it is (the log read alone would call it tampering)."""
    for path in paths:
        if path.is_dir():
            raise CorruptState(_directory(path))


# A lockless reader (--can-edit, --audit) can interleave with a writer's three steps (temp file,
# log line, rename) and see `.state` and the log disagree for a moment. Reading
# state, log, temp, state again and retrying while `.state` changed under us closes that window:
# a writer's rename between the two state reads shows up as a difference.
_READ_TRIES = 20


def load_dir(ref: TaskRef, folder: Path, *, strict: bool = True) -> TaskRecord:
    """Read the task in `folder` (see `load`). Writes nothing; safe without the lock.
    CorruptState (exit 2) when `.state`, `.state.log` or the `.state` temp file is a directory,
    even with `strict=False` (nothing can be re-sealed over a directory)."""
    state_file, log_file = folder / STATE, folder / LOG
    _no_directories(state_file, log_file, tmp_path(state_file))
    for _ in range(_READ_TRIES):
        before = _read_bytes(state_file)
        chain = chainlog.read_chain(log_file)
        pending = _read_bytes(tmp_path(state_file))
        after = _read_bytes(state_file)
        if before == after:
            break
    present = present_artifacts(folder)
    pending_phase = phase_token(pending) if pending is not None else None
    # An interrupted commit (temp file written and logged, rename not done): the logged state
    # is the truth, and the next locked command rolls the temp file forward.
    rolled = chain.ok and pending_phase is not None and pending_phase == chain.last_state
    if after is None:
        if rolled:
            return TaskRecord(ref, folder, pending_phase, chain, "", present)
        if log_file.exists():
            return TaskRecord(ref, folder, None, chain, f"{state_file} was deleted but its log exists", present)
        return TaskRecord(ref, folder, None, chain, "", present)
    phase = phase_token(after)
    if phase is None:
        message = _corrupt_message(state_file, after, ref)
        if strict:
            raise CorruptState(message)
        return TaskRecord(ref, folder, None, chain, message, present)
    tamper = ""
    foreign = foreign_line(chain, ref)
    if not chain.ok:
        tamper = f"{log_file}: {chain.error}"
    elif foreign:
        tamper = f"{log_file}: {foreign}"
    elif not chain.lines:
        tamper = f"{state_file} has no {LOG}: it was written outside automaton"
    elif chain.last_state != phase:
        if rolled:
            phase = str(pending_phase)
        else:
            tamper = (
                f"{state_file} says {phase!r} but its log's last line says {chain.last_state!r}:"
                " it was edited outside automaton"
            )
    return TaskRecord(ref, folder, phase, chain, tamper, present)


def foreign_line(chain: ChainCheck, ref: TaskRef) -> str:
    """Why a keyed log belongs to another task ("" when it does not): a keyed line whose `task`
    field names another task was copied from that task's log (a valid mac vouches for the line,
    not for the folder it was copied into)."""
    for n, line in enumerate(chain.lines, start=1):
        named = line.fields.get("task")
        if line.mac and named is not None and named != str(ref):
            return f"line {n} is task {named!r}'s, not {str(ref)!r}'s: the log was copied from another task"
    return ""


def _corrupt_message(state_file: Path, data: bytes, ref: TaskRef) -> str:
    shown = data[:40].decode("utf-8", "replace").strip() or "empty"
    return (
        f"{state_file}: not a valid phase ({shown!r}); it was written outside automaton —"
        f" a human re-seals it with: automaton --approve --task {ref} --to PHASE"
    )


def recover(record: TaskRecord) -> None:
    """Under the task lock: finish or drop an interrupted `.state` commit."""
    chainlog.recover(record.state_file, record.log_file, phase_token)


def lock_path(project: Project, ref: TaskRef) -> Path:
    """The lock of one task: `tasks/.state.lock-NAME` (`-PARENT.SUB` for a sub-task).

    It lives beside the task folders, not inside: completing a task moves its folder to
    tasks/complete/, and a waiter opening a lock inside the moved folder would make filelock
    recreate the old folder (it creates missing parents), which would then read as a new
    legacy task. The `.state` prefix puts it under the always-denied paths of --can-edit.
    """
    key = f"{ref.parent}.{ref.name}" if ref.parent is not None else str(ref.name)
    return project.tasks_dir / f"{LOCK}-{key}"


def deleted_state(project: Project, ref: TaskRef) -> str:
    """Why a folder without `.state` and `.state.log` is not legacy, or "" when it may be.

    automaton takes a task's lock (`lock_path`, never deleted) whenever it writes the task, so
    a lock file beside a folder with neither file means both were deleted after automaton
    managed it: re-inferring the phase from artifacts would let an agent skip sign-offs by
    deleting them. Call it before taking the lock (taking it creates the file).
    """
    if not lock_path(project, ref).exists():
        return ""
    return (f"{project.task_dir(ref) / STATE} and {LOG} were deleted (its lock file"
            f" {lock_path(project, ref).name} shows automaton managed this task): it was not migrated")


def _subs(folder: Path) -> list[Path]:
    return sorted(
        sub for sub in folder.iterdir()
        if sub.is_dir() and NAME_RE.match(sub.name) and ((sub / STATE).exists() or (sub / LOG).exists())
    )


def iter_tasks(project: Project) -> Iterator[tuple[TaskRef, Path]]:
    """Every task folder: `tasks/*`, `tasks/complete/*` and their sub-tasks `.../P/SUB`.

    Folders whose names are not task names are skipped here; `stray_folders` lists them.
    """
    root = project.tasks_dir
    if not root.is_dir():
        return
    for folder in sorted(root.iterdir()):
        if not folder.is_dir() or folder.name.startswith("."):
            continue
        if folder.name == COMPLETE_DIR:
            for done in sorted(folder.iterdir()):
                if done.is_dir() and NAME_RE.match(done.name):
                    ref = TaskRef(TaskName(done.name))
                    yield ref, done
                    for sub in _subs(done):
                        yield TaskRef(TaskName(sub.name), ref.name), sub
            continue
        if not NAME_RE.match(folder.name):
            continue
        ref = TaskRef(TaskName(folder.name))
        yield ref, folder
        for sub in _subs(folder):
            yield TaskRef(TaskName(sub.name), ref.name), sub


def stray_folders(project: Project) -> list[Path]:
    """Folders in `tasks/` (and `tasks/complete/`) whose names are not valid task names."""
    root = project.tasks_dir
    if not root.is_dir():
        return []
    found = []
    for parent in (root, root / COMPLETE_DIR):
        if not parent.is_dir():
            continue
        for folder in sorted(parent.iterdir()):
            if folder.is_dir() and not folder.name.startswith(".") and not NAME_RE.match(folder.name):
                found.append(folder)
    return found
