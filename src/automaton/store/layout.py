"""Where things live: project root discovery and the paths of tasks and loops."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

from automaton.core.errors import BadInput
from automaton.core.names import LoopName, TaskRef
from automaton.core.record import record  # not dataclasses: on the hook path
from automaton.store.atomic import read_regular

TASKS = "tasks"
DOT = ".automaton"
COMPLETE_DIR = "complete"


def framework_home() -> Path:
    """The framework folder: `$AUTOMATON_HOME` if set, else the packaged resources."""
    env = os.environ.get("AUTOMATON_HOME")
    if env:
        return Path(env)
    # The package folder, as importlib.resources.files("automaton") names it for a package on
    # disk (the only kind this path was ever usable for), without importing importlib.resources
    # (zipfile, tempfile, shutil): every loop command reads the packaged config.md.
    return Path(__file__).parent.parent / "resources"


def kept_exports_dir() -> Path:
    """The folder of this user's kept verifier exports: `$XDG_CACHE_HOME/automaton/exports`
    (an absolute XDG_CACHE_HOME only, per the XDG base directory spec), else
    `~/.cache/automaton/exports`."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "automaton" / "exports"


def kept_export_of(repo: Path, loop: str) -> Path:
    """The kept verifier export of loop `loop` of the project at `repo` (it may not exist): one
    folder per project path and loop name, under `kept_exports_dir()`."""
    import hashlib  # not at module level: the hook path imports this module and never hashes

    key = hashlib.sha256(os.fsencode(f"{os.path.realpath(repo)}\0{loop}")).hexdigest()[:32]
    return kept_exports_dir() / key


IDLE_SUFFIX, SIZE_SUFFIX, STAT_SUFFIX = ".idle", ".size", ".stat"  # the files kept beside a kept export


def kept_export_marks(folder: Path) -> tuple[Path, Path]:
    """(idle mark, recorded size) of the kept export `folder`: `<folder>.idle`, written when no
    process of its last run is left (`runner/verify.py`), and `<folder>.size`, its size in bytes
    (`runner/exportcache.py`)."""
    return folder.with_name(folder.name + IDLE_SUFFIX), folder.with_name(folder.name + SIZE_SUFFIX)


def kept_export_stats(folder: Path) -> Path:
    """`<folder>.stat`: the sealed stat data of the kept export's files (`git.export.StatRecord`)."""
    return folder.with_name(folder.name + STAT_SUFFIX)


def _git_common_root(start: Path) -> Path | None:
    """Inside a linked worktree, the main checkout that owns it: the parent of the common git
    folder, found as git finds it (gitrepository-layout(5)) without starting git: `start/.git`
    is a file `gitdir: <path>` (relative to `start` or absolute) naming the worktree's git
    folder, whose `commondir` file names the common one (relative to it, or absolute; without
    one the git folder is the common one). None when the pointer is missing, malformed or
    longer than 4 KiB, either folder lacks what git requires of it (`_git_dir`), or the common
    folder is not a repository's `.git` folder (a submodule's is not). Files are
    read only when regular and without blocking: an agent can put a FIFO where its worktree's
    `.git` was, and the hook before its next edit must not hang. Not `git rev-parse`: a
    process and the `subprocess` import were a sixth of that hook's CPU."""
    pointer = read_regular(start / ".git", _POINTER_MAX + 1)
    if pointer is None or len(pointer) > _POINTER_MAX or not pointer.startswith(b"gitdir: "):
        return None
    try:
        gitdir = os.path.join(start, os.fsdecode(pointer[8:].rstrip(b"\r\n")))
        commondir = read_regular(os.path.join(gitdir, "commondir"), _POINTER_MAX + 1)
        if commondir is not None and len(commondir) > _POINTER_MAX:
            return None
        # No `commondir`: the gitdir is a repository's own (a submodule's, or one `.git` names)
        common = os.path.realpath(gitdir if commondir is None else
                                  os.path.join(gitdir, os.fsdecode(commondir.rstrip(b"\r\n"))))
    except ValueError:  # a NUL in either file
        return None
    if os.path.basename(common) != ".git" or not _git_dir(gitdir) or not _git_dir(common, whole=True):
        return None
    return Path(common).parent


_POINTER_MAX = 4096  # bytes of a `.git` pointer or a `commondir` file; a longer one is refused


def _git_dir(path: str, *, whole: bool = False) -> bool:
    """`path` has what git requires of a git folder before it uses one: a `HEAD` file, and for
    a repository's own folder (`whole`) also `objects/` and `refs/`."""
    if not os.path.isfile(os.path.join(path, "HEAD")):
        return False
    return not whole or all(os.path.isdir(os.path.join(path, sub)) for sub in ("objects", "refs"))


def is_loop_worktree(parts: tuple[str, ...] | list[str]) -> bool:
    """Whether four path parts are `.automaton/loops/<name>/worktree`, names compared
    case-insensitively (a case-insensitive volume takes any spelling)."""
    return len(parts) == 4 and (parts[0].lower(), parts[1].lower(), parts[3].lower()) == (DOT, "loops", "worktree")


def loop_worktree_of(path: Path) -> tuple[Path, str] | None:
    """(project, loop name) of the outermost loop worktree `path` is in
    (`<project>/.automaton/loops/<name>/worktree[/…]`, `is_loop_worktree`), the project
    resolved and holding `.automaton/`; None when it is in none. `path` is taken as given: the
    caller decides whether links in it are followed first."""
    parts = path.parts
    for i in range(1, len(parts) - 3):
        if is_loop_worktree(parts[i:i + 4]):
            project = Path(*parts[:i])
            if (project / DOT).is_dir():
                return project.resolve(), parts[i + 2]
    return None


def find_root(start: Path) -> Path:
    """Walk up from `start` to the nearest folder holding `.automaton/`, `tasks/` or `.git`.

    A loop's worktree (`<project>/.automaton/loops/<name>/worktree`, also a folder inside one)
    belongs to the project it sits in: known from the path, never from the worktree's `.git`
    pointer, which the agent working there may rewrite. Any other `.git` *file* marks a linked
    worktree: the project is the main checkout owning it. Falls back to `start` itself when
    nothing is found.
    """
    # The path as given first: a folder of the worktree may be a symlink out of it (to `/`,
    # to a folder with an `.automaton/` of the agent's own), and an agent whose cwd is such a
    # link is still the loop's agent.
    for candidate in (Path(os.path.abspath(start)), start.resolve()):
        found = loop_worktree_of(candidate)
        if found is not None:
            return found[0]
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").is_file():
            owner = _git_common_root(folder)
            if owner is not None:
                return owner
        if (folder / DOT).is_dir() or (folder / TASKS).is_dir() or (folder / ".git").exists():
            return folder
    return start


@record(frozen=True)
class Project:
    """A project root and the paths derived from it. `root` is absolute and resolved."""

    root: Path

    @classmethod
    def at(cls, project: str | None, cwd: Path | None = None) -> Project:
        """The project named by `--project DIR` (must exist) or found from `cwd`."""
        if project is not None:
            path = Path(project).expanduser()
            if not path.is_dir():
                raise BadInput(f"--project {project!r} is not a directory: pass an existing project folder")
            return cls(path.resolve())
        return cls(find_root(cwd or Path.cwd()))

    # Cached (the instance's __dict__, which a frozen record still has): listing 500 loops
    # asked for these paths some 14,000 times, each a new Path.
    @cached_property
    def tasks_dir(self) -> Path:
        return self.root / TASKS

    @cached_property
    def dot(self) -> Path:
        return self.root / DOT

    @cached_property
    def loops_dir(self) -> Path:
        return self.dot / "loops"

    @property
    def focus_file(self) -> Path:
        return self.dot / "focus"

    @property
    def focus_log(self) -> Path:
        return self.dot / "focus.log"

    @property
    def config_file(self) -> Path:
        return self.dot / "config.json"

    @property
    def config_log(self) -> Path:
        """The chained log whose last line seals `config.json` (store.project_config)."""
        return self.dot / "config.log"

    @property
    def sealed_config(self) -> Path:
        """The copy of the last approved `config.json`, kept to show a human what changed."""
        return self.dot / "sealed" / "config.json"

    def task_dir(self, ref: TaskRef) -> Path:
        """The folder of `ref`: `tasks/NAME`, `tasks/complete/NAME` or `tasks/P/SUB`."""
        if ref.parent is not None:
            parent = self.task_dir(TaskRef(ref.parent))
            return parent / ref.name
        live = self.tasks_dir / ref.name
        done = self.tasks_dir / COMPLETE_DIR / ref.name
        if done.is_dir() and not live.exists():
            return done
        return live

    def loop_dir(self, name: LoopName) -> Path:
        return self.loops_dir / name

    def worktree_dir(self, name: LoopName) -> Path:
        return self.loop_dir(name) / "worktree"
