"""Where things live: project root discovery and the paths of tasks and loops."""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path

from automaton.core.errors import BadInput
from automaton.core.names import LoopName, TaskRef
from automaton.core.record import record  # not dataclasses: on the hook path

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
    pointer, which the agent working there may rewrite. Any other linked worktree (its `.git`
    is a file) is a project of its own, with its own `tasks/`, `.automaton/` and hook settings:
    it has its own branch and files, and an agent session started there reads the hook
    settings there (once the main checkout's were used, so such a session ran with no hook).
    Falls back to `start` itself when nothing is found.
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

    @classmethod
    def to_create(cls, project: str | None, cwd: Path | None = None) -> Project:
        """`Project.at` for a verb that creates state there (`--create-task`, `--create-loop`,
        `--install-hooks`, `--install-prompts`). A project is the top of a git repository
        (or of a linked worktree), a folder automaton already made a project (it holds
        `.automaton/`), or the folder `--project DIR` names; never `/` or the home folder,
        whatever names it (BadInput, exit 2, one line: `cd / && automaton --create-task t`
        once wrote `/tasks/t/`)."""
        found = cls.at(project, cwd)
        root = found.root
        home = Path(os.path.expanduser("~")).resolve()
        if root == Path(root.anchor) or root == home:
            what = "the file system's root" if root == Path(root.anchor) else "your home folder"
            raise BadInput(f"{root} is {what}, never a project: run automaton in your project's top folder"
                           " (or pass --project DIR naming it)")
        if project is None and not ((root / ".git").exists() or (root / DOT).is_dir()):
            raise BadInput(f"{root} is not the top of a git repository: run automaton in your project's top"
                           " folder (git init makes one), or name the folder with --project DIR")
        return found

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
