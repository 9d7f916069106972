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
    try:
        data = state_file.read_bytes()
    except OSError as exc:
        raise CorruptState(f"{state_file}: cannot read ({exc.strerror}); fix permissions") from None
    phase = phase_token(data)
    if phase is None:
        shown = data[:40].decode("utf-8", "replace").strip() or "empty"
        raise CorruptState(
            f"{state_file}: not a valid phase ({shown!r}); it was written outside automaton —"
            " a human can re-seal it with: automaton --approve --task TASK --to PHASE"
        )
    return phase


def sha256_file(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return MISSING


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
        return sorted(
            p for p in self.dir.iterdir()
            if p.is_dir() and NAME_RE.match(p.name) and ((p / STATE).exists() or (p / LOG).exists())
        )


def present_artifacts(folder: Path) -> set[str]:
    """Artifact file names in `folder` (only the nine deliverables; metadata never counts)."""
    try:
        names = {p.name for p in folder.iterdir() if p.is_file()}
    except OSError:
        return set()
    return names & ARTIFACTS


def load(project: Project, ref: TaskRef) -> TaskRecord:
    """Read a task read-only. Raises BadInput for an unknown task, CorruptState for a bad `.state`."""
    folder = project.task_dir(ref)
    if not folder.is_dir():
        raise BadInput(f"unknown task {str(ref)!r}: no folder {folder}; create it with automaton --create-task")
    return load_dir(ref, folder)


def load_dir(ref: TaskRef, folder: Path) -> TaskRecord:
    state_file, log_file = folder / STATE, folder / LOG
    chain = chainlog.read_chain(log_file)
    present = present_artifacts(folder)
    if not state_file.exists():
        if log_file.exists():
            return TaskRecord(ref, folder, None, chain, f"{state_file} was deleted but its log exists", present)
        return TaskRecord(ref, folder, None, chain, "", present)
    phase = read_phase(state_file)
    tamper = ""
    if not chain.ok:
        tamper = f"{log_file}: {chain.error}"
    elif not chain.lines:
        tamper = f"{state_file} has no {LOG}: it was written outside automaton"
    elif chain.last_state != phase:
        pending = tmp_path(state_file)
        pending_phase = phase_token(pending.read_bytes()) if pending.exists() else None
        if pending_phase is not None and pending_phase == chain.last_state:
            phase = pending_phase  # an interrupted commit: the next locked command rolls it forward
        else:
            tamper = (
                f"{state_file} says {phase!r} but its log's last line says {chain.last_state!r}:"
                " it was edited outside automaton"
            )
    return TaskRecord(ref, folder, phase, chain, tamper, present)


def recover(record: TaskRecord) -> None:
    """Under the task lock: finish or drop an interrupted `.state` commit."""
    chainlog.recover(record.state_file, record.log_file, phase_token)


def lock_path(folder: Path) -> Path:
    return folder / LOCK


def iter_tasks(project: Project) -> Iterator[tuple[TaskRef, Path]]:
    """Every task folder: `tasks/*`, `tasks/complete/*` and sub-tasks `tasks/P/SUB`."""
    root = project.tasks_dir
    if not root.is_dir():
        return
    for folder in sorted(root.iterdir()):
        if not folder.is_dir() or folder.name.startswith("."):
            continue
        if folder.name == COMPLETE_DIR:
            for done in sorted(folder.iterdir()):
                if done.is_dir() and NAME_RE.match(done.name):
                    yield TaskRef(TaskName(done.name)), done
            continue
        if not NAME_RE.match(folder.name):
            continue
        ref = TaskRef(TaskName(folder.name))
        yield ref, folder
        for sub in sorted(folder.iterdir()):
            if sub.is_dir() and NAME_RE.match(sub.name) and ((sub / STATE).exists() or (sub / LOG).exists()):
                yield TaskRef(TaskName(sub.name), ref.name), sub
