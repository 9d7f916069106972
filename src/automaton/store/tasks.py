"""Task folders on disk: read `.state` (fail closed), its chained log, artifacts and bindings."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from automaton.core.approvals import MISSING, parse_bind
from automaton.core.chain import ChainCheck
from automaton.core.errors import BadInput, CorruptState
from automaton.core.names import NAME_RE, TaskName, TaskRef
from automaton.core.phases import ARTIFACTS, is_phase
from automaton.core.record import field, record
from automaton.store import chainlog
from automaton.store.atomic import open_regular, read_all, tmp_path
from automaton.store.layout import COMPLETE_DIR, Project

TYPE_CHECKING = False  # typing and collections.abc stay off the hook path (core/record.py)
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

STATE = ".state"
LOG = ".state.log"
TEMP = tmp_path(Path(STATE)).name  # the temp file a commit of `.state` writes first
LOCK = ".state.lock"
# Log events whose `bind` field (re)binds approved artifacts to their SHA-256.
BINDING_EVENTS = frozenset({"APPROVED", "RESEALED"})
UNREADABLE = "unreadable"
# Bytes: an artifact (SPEC.md, DESIGN.md, ...) larger than this is not hashed but UNREADABLE.
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024


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
    """SHA-256 hex of the regular file at `path` (symlinks followed); MISSING when absent,
    UNREADABLE for anything else: a folder, no permission, a FIFO or device, or a file over
    MAX_ARTIFACT_BYTES. The agent may put any of those where an artifact goes; opened without
    blocking and never read unless regular (`atomic.open_regular`), a FIFO cannot hang the hook
    or a human's sign-off, nor `/dev/zero` fill memory, and a huge (or sparse) file is not
    hashed for minutes, which would make the hook miss the agent CLI's timeout (a hook that
    does not answer lets the call through). UNREADABLE differs from every hash, so it demotes,
    and a sign-off refuses it."""
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return MISSING
    except OSError:  # no permission, a looping link, a folder, a FIFO or device
        return UNREADABLE
    try:
        if os.fstat(fd).st_size > MAX_ARTIFACT_BYTES:
            return UNREADABLE
        digest, left = hashlib.sha256(), MAX_ARTIFACT_BYTES + 1
        while left > 0 and (chunk := os.read(fd, min(1 << 20, left))):
            digest.update(chunk)
            left -= len(chunk)
        return digest.hexdigest() if left > 0 else UNREADABLE  # grown past the cap while read
    except OSError:  # an I/O error
        return UNREADABLE
    finally:
        os.close(fd)


@record
class TaskRecord:
    """One task as found on disk. `phase` None = legacy folder (no `.state`, no log).

    `tamper` is empty when `.state` agrees with the last line of an intact `.state.log`;
    otherwise it says what disagrees (tamper evidence).
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

    def current_hashes(self, names: Iterable[str] = ARTIFACTS) -> dict[str, str]:
        """artifact -> SHA-256 now (MISSING/UNREADABLE), for `names` (default: all nine).
        A demotion check passes `bound()`: only an artifact an approval binds can demote, and
        the hook runs this check before every agent edit."""
        return {name: sha256_file(self.dir / name) for name in names}

    def subtasks(self) -> list[Path]:
        """Sub-task folders: child folders with a `.state` or a `.state.log`."""
        if self.ref.parent is not None:
            return []
        return _subs(self.dir)


def present_artifacts(folder: Path) -> set[str]:
    """Artifact file names in `folder` (only the nine deliverables; metadata never counts)."""
    try:
        return _artifacts(_listing(folder))
    except OSError:
        return set()


def _listing(folder: str | Path) -> dict[str, os.DirEntry[str]]:
    """name -> entry of every name in `folder`. `os.scandir` reports each entry's type with the
    listing, so telling files from folders costs no `stat` (the audit reads thousands of
    task folders). Raises OSError when the folder cannot be listed."""
    with os.scandir(folder) as found:
        return {entry.name: entry for entry in found}


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """`Path.is_dir()` of the entry: symlinks followed, False when it cannot be looked at."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _artifacts(entries: dict[str, os.DirEntry[str]]) -> set[str]:
    found = set()
    for name in ARTIFACTS & entries.keys():
        try:
            if entries[name].is_file():  # symlinks followed, as Path.is_file()
                found.add(name)
        except OSError:
            pass
    return found


def task_hint(project: Project, ref: TaskRef) -> str:
    """`"; did you mean X?"` for an unknown task `ref`: the closest task names (a sub-task's
    among its parent's, a top-level one's among tasks/ and tasks/complete/), or ""."""
    from automaton.core.names import did_you_mean, folder_names
    from automaton.store.layout import COMPLETE_DIR

    if ref.parent is not None:
        known = [f"{ref.parent}/{n}" for n in folder_names(project.task_dir(TaskRef(ref.parent)))]
    else:
        known = [n for n in folder_names(project.tasks_dir) if n != COMPLETE_DIR]
        known += folder_names(project.tasks_dir / COMPLETE_DIR)
    return did_you_mean(str(ref), known)


def load(project: Project, ref: TaskRef, *, strict: bool = True) -> TaskRecord:
    """Read a task read-only. Raises BadInput for an unknown task, CorruptState for a bad `.state`
    (with `strict=False` a bad `.state` is reported in `tamper` instead, for the human re-seal)."""
    folder = project.task_dir(ref)
    if not folder.is_dir():
        raise BadInput(f"unknown task {str(ref)!r}{task_hint(project, ref)} (no folder {folder});"
                       " create it with automaton --create-task")
    return load_dir(ref, folder, strict=strict)


def _read_bytes(path: str | Path) -> bytes | None:
    try:
        return read_all(path)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise CorruptState(_directory(Path(path))) from None
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
    folder_str = str(folder)
    try:
        entries: dict[str, os.DirEntry[str]] | None = _listing(folder_str)
    except OSError:  # not listable (searchable only?): look at each name instead
        entries = None
    return load_listed(ref, folder, folder_str, entries, strict=strict)


def load_listed(ref: TaskRef, folder: Path, folder_str: str, entries: dict[str, os.DirEntry[str]] | None, *,
                strict: bool = True) -> TaskRecord:
    """`load_dir` for a folder its caller listed already (`store.taskscan`, which lists each of
    thousands of folders once for the audit): `entries` is its listing (None when it could not
    be listed), `folder_str` is `str(folder)`; files are named by plain strings, not `Path`s."""
    state_file, log_file = f"{folder_str}{os.sep}{STATE}", f"{folder_str}{os.sep}{LOG}"
    temp = f"{folder_str}{os.sep}{TEMP}"
    _refuse_directories(folder, entries)
    # Read state, log, temp, state again, retried while `.state` changed (`_READ_TRIES`). The
    # temp file only settles a state that is missing or behind its log: when the listing shows
    # none, `.state` names a phase, the intact log's last line names the same and `.state` reads
    # the same again, nothing below looks at it, so it is not read. A temp file that is there is
    # always read (one that cannot be read is CorruptState, as every writer would fail on it),
    # and so is any in the last round.
    no_temp = entries is not None and TEMP not in entries
    before, after, chain, pending = _read_settled(state_file, log_file, temp, no_temp)
    token = phase_token(before) if before is not None else None
    present = present_artifacts(folder) if entries is None else _artifacts(entries)
    pending_phase = phase_token(pending) if pending is not None else None
    # An interrupted commit (temp file written and logged, rename not done): the logged state
    # is the truth, and the next locked command rolls the temp file forward.
    rolled = chain.ok and pending_phase is not None and pending_phase == chain.last_state
    if after is None:
        if rolled:
            return TaskRecord(ref, folder, pending_phase, chain, "", present)
        if os.path.exists(log_file):
            return TaskRecord(ref, folder, None, chain, f"{state_file} was deleted but its log exists", present)
        return TaskRecord(ref, folder, None, chain, "", present)
    phase = token if after == before else phase_token(after)
    if phase is None:
        message = _corrupt_message(folder / STATE, after, ref)
        if strict:
            raise CorruptState(message)
        return TaskRecord(ref, folder, None, chain, message, present)
    phase, tamper = _judged(ref, chain, phase, pending_phase if rolled else None, state_file, log_file)
    return TaskRecord(ref, folder, phase, chain, tamper, present)


def _read_settled(state_file: str, log_file: str, temp: str,
                  no_temp: bool) -> tuple[bytes | None, bytes | None, ChainCheck, bytes | None]:
    """(`.state` before, `.state` after, the log's chain, the temp file or None) from the last
    round of `load_listed`'s reads; `no_temp`: the listing showed no temp file."""
    last = _READ_TRIES - 1
    for attempt in range(_READ_TRIES):
        before = _read_bytes(state_file)
        chain = chainlog.read_chain(log_file)
        token = phase_token(before) if before is not None else None
        agrees = no_temp and attempt < last and token is not None and chain.ok and token == chain.last_state
        pending = None if agrees else _read_bytes(temp)
        after = _read_bytes(state_file)
        if before == after:
            break
    return before, after, chain, pending


def _refuse_directories(folder: Path, entries: dict[str, os.DirEntry[str]] | None) -> None:
    """CorruptState when `.state`, `.state.log` or the temp file is a directory."""
    if entries is None:
        _no_directories(folder / STATE, folder / LOG, folder / TEMP)
        return
    for name in (STATE, LOG, TEMP):
        if name in entries and _is_dir(entries[name]):
            raise CorruptState(_directory(folder / name))


def _judged(ref: TaskRef, chain: ChainCheck, phase: str, rolled: str | None, state_file: str,
            log_file: str) -> tuple[str, str]:
    """(the phase, why the state is tampered or "") of a `.state` naming `phase` against its log;
    `rolled`: the phase of a temp file the log already records (an interrupted commit), else None."""
    foreign = foreign_line(chain, ref)
    if not chain.ok:
        return phase, f"{log_file}: {chain.error}"
    if foreign:
        return phase, f"{log_file}: {foreign}"
    if not chain.lines:
        return phase, f"{state_file} has no {LOG}: it was written outside automaton"
    if chain.last_state != phase:
        if rolled is not None:
            return rolled, ""
        return phase, (f"{state_file} says {phase!r} but its log's last line says {chain.last_state!r}:"
                       " it was edited outside automaton")
    return phase, ""


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
        folder / name for name, entry in _listing(folder).items()
        if NAME_RE.match(name) and _is_dir(entry)
        and ((folder / name / STATE).exists() or (folder / name / LOG).exists())
    )


def _folders(parent: Path) -> list[tuple[str, Path]]:
    """(name, path) of every folder in `parent` (symlinks followed), sorted by name."""
    return [(name, parent / name) for name, entry in sorted(_listing(parent).items()) if _is_dir(entry)]


def iter_tasks(project: Project) -> Iterator[tuple[TaskRef, Path]]:
    """Every task folder: `tasks/*`, `tasks/complete/*` and their sub-tasks `.../P/SUB`.

    Folders whose names are not task names are skipped here; `stray_folders` lists them.
    """
    root = project.tasks_dir
    if not root.is_dir():
        return
    for name, folder in _folders(root):
        if name.startswith("."):
            continue
        if name == COMPLETE_DIR:
            for done_name, done in _folders(folder):
                if NAME_RE.match(done_name):
                    ref = TaskRef(TaskName(done_name))
                    yield ref, done
                    for sub in _subs(done):
                        yield TaskRef(TaskName(sub.name), ref.name), sub
            continue
        if not NAME_RE.match(name):
            continue
        ref = TaskRef(TaskName(name))
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
        found += [folder for name, folder in _folders(parent) if not name.startswith(".") and not NAME_RE.match(name)]
    return found


def ensure_artifact(folder: Path, name: str) -> str | None:
    """Create the artifact `name` (one of ARTIFACTS) in the task `folder` empty (mode 0644)
    unless something is there already, so that a kernel sandbox can grant that one file.
    Returns why the file cannot be granted, None when it can: a path that is not a regular
    file (a symlink, a folder, a FIFO) or has more than one hard link would hand the agent
    another inode (say `.state`). Never follows a symlink; never truncates."""
    if name not in ARTIFACTS:
        raise ValueError(f"{name!r} is not an artifact")
    path = folder / name
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        os.close(fd)
    except FileExistsError:
        pass
    except OSError as exc:
        return f"{path} cannot be created ({exc.strerror})"
    try:
        found = os.lstat(path)
    except OSError as exc:
        return f"{path} cannot be looked at ({exc.strerror})"
    import stat

    if not stat.S_ISREG(found.st_mode):
        return f"{path} is not a regular file (a symlink or other entry)"
    if found.st_nlink != 1:
        return f"{path} has {found.st_nlink} hard links (it may share its inode with .state)"
    return None
