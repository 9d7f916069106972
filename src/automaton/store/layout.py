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


def _git_common_root(start: Path) -> Path | None:
    """Inside a linked worktree, the main checkout that owns it (`git rev-parse --git-common-dir`)."""
    if not (start / ".git").is_file():
        return None
    import subprocess  # lazy: the hook path (run before every agent edit) rarely needs it

    try:
        out = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
            cwd=start, capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    common = Path(out.stdout.strip())
    return common.parent if common.name == ".git" else None


def find_root(start: Path) -> Path:
    """Walk up from `start` to the nearest folder holding `.automaton/`, `tasks/` or `.git`.

    A `.git` *file* marks a linked worktree: the project is the main checkout owning it.
    Falls back to `start` itself when nothing is found.
    """
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
