"""What an agent under the kernel sandbox may write in the project, and what it never sees.

Shared by the two use cases that confine an agent: an interactive session
(`commands.sandbox_session`, `automaton --sandbox`) and a loop tick in the main checkout
(`runner.confine`). The writable set is the task's phase scope made coarse enough for the
kernel, which grants rights per directory or per existing file (Landlock and Seatbelt alike):

| phase | writable in the project |
|---|---|
| research … referee (one artifact each) | the phase's artifact file (SPEC.md, …) |
| implement | every top-level entry except `tasks/`, `.automaton/`, `.git`, agent settings |
|           | folders; and the task's IMPLEMENTATION.md |
| doc_review | the task's DOC_REVIEW.md, `docs/`, every existing `*.md` outside `tasks/`, `.automaton/`, `.git` |
| `:awaiting_approval`, `:approved`, new, complete, human_intervention | nothing |
| no task (no `--task`, no focus) | as implement, without a task file |

The task's folder itself is never granted: the kernel grants the artifact FILE (its inode),
which the session creates empty first (`store.tasks.ensure_artifact`), so `.state`, its log
and every other file there stay read-only, and the agent cannot create, delete or rename
anything in the folder. An editor that saves by writing a temp file and renaming it over the
artifact fails there (EACCES); writing the file in place works. An artifact that is a symlink
or has another hard link is not granted at all (it could be `.state`'s inode).

The folder of the record key is hidden from every agent (`key_dir`), and so are the web
browsers' profile folders (`hidden_paths`): they hold the dashboard's session cookie, which
carries a human's approvals.
"""

from __future__ import annotations

import os
from pathlib import Path

from automaton.core import phases as ph
from automaton.core.errors import BadInput
from automaton.store.layout import DOT, TASKS

# Top-level entries never writable by an agent: brake state, git internals, agent settings.
NEVER = frozenset({TASKS, DOT, ".git", ".claude", ".codex", ".gemini"})
KEY_DIR = (".config", "automaton")
# Profile folders of the common browsers (cookie stores), relative to HOME: a session cookie of
# `automaton --dashboard` read from one would let an agent approve its own halt. Linux (XDG,
# snap, flatpak) and macOS locations; a browser not listed here is a documented residual risk.
BROWSER_PROFILES = (
    (".config", "chromium"), (".config", "google-chrome"), (".config", "google-chrome-beta"),
    (".config", "google-chrome-unstable"), (".config", "BraveSoftware"), (".config", "microsoft-edge"),
    (".config", "vivaldi"), (".config", "opera"), (".mozilla",), ("snap", "chromium"), ("snap", "firefox"),
    (".var", "app", "org.chromium.Chromium"), (".var", "app", "com.google.Chrome"),
    (".var", "app", "org.mozilla.firefox"), ("Library", "Application Support", "Google", "Chrome"),
    ("Library", "Application Support", "Chromium"), ("Library", "Application Support", "Firefox"),
    ("Library", "Application Support", "BraveSoftware"), ("Library", "Application Support", "Microsoft Edge"),
    ("Library", "Cookies"), ("Library", "Containers", "com.apple.Safari"),
)


def key_dir(home: Path | None = None) -> Path:
    """The folder of the per-user record key (`~/.config/automaton`), hidden from every agent."""
    return (home or Path.home()).joinpath(*KEY_DIR)


def hidden_paths(home: Path | None = None) -> tuple[Path, ...]:
    """What no sandboxed agent may read or write: the record key's folder (always, even before
    it exists) and each browser profile folder of BROWSER_PROFILES that exists now."""
    base = home or Path.home()
    return (key_dir(base), *(p for p in (base.joinpath(*rel) for rel in BROWSER_PROFILES) if p.is_dir()))


def _project_entries(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.iterdir() if p.name not in NEVER and not p.name.lower().startswith(".state"))
    except OSError as exc:
        raise BadInput(f"cannot list the project {root}: {exc.strerror}") from None


def _markdown(root: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root:
            dirnames[:] = [d for d in dirnames if d not in NEVER]
        dirnames[:] = [d for d in dirnames if d != ".git"]
        found += [Path(dirpath) / f for f in filenames if f.lower().endswith(".md")]
    return sorted(found)


def artifact_of(phase: str | None) -> str | None:
    """The artifact file an agent at `phase` writes (SPEC.md for research, …); None for a
    phase that writes none (sub-states, new, complete, human_intervention, no task)."""
    if phase is None or ":" in phase:
        return None
    return ph.ARTIFACT.get(phase)


def project_writable(root: Path, phase: str | None, task_dir: Path | None) -> list[Path]:
    """The project paths the kernel lets an agent at `phase` write (see the module table).
    `phase` None: no task is in force. The artifact file is listed as it is; the caller makes
    sure it exists and may be granted (`store.tasks.ensure_artifact`), else leaves it out."""
    if phase is None:
        return _project_entries(root)
    name = artifact_of(phase)
    if name is None or task_dir is None:
        return []
    own = task_dir / name
    if phase == "implement":
        return [*_project_entries(root), own]
    if phase == "doc_review":
        docs = root / "docs"
        return [own, *([docs] if docs.is_dir() else []), *_markdown(root)]
    return [own]
