"""What an agent under the kernel sandbox may write in the project, and what it never sees.

Shared by the two use cases that confine an agent: an interactive session
(`commands.sandbox_session`, `automaton --sandbox`) and a loop tick in the main checkout
(`runner.confine`). The writable set is the task's phase scope made coarse enough for the
kernel, which grants rights per directory or per existing file (Landlock and Seatbelt alike):

| phase | writable in the project |
|---|---|
| research … referee (one artifact each) | the task's folder |
| implement | every top-level entry except `tasks/`, `.automaton/`, `.git`, agent settings |
|           | folders; and the task's folder |
| doc_review | the task's folder, `docs/`, every existing `*.md` outside `tasks/`, `.automaton/`, `.git` |
| `:awaiting_approval`, `:approved`, new, complete, human_intervention | nothing |
| no task (no `--task`, no focus) | as implement, without a task folder |

Inside the task's folder the kernel cannot tell SPEC.md from `.state`: there the keyed state
log holds (a `.state` written by anything but automaton is tamper), and the transition rules
hold against artifacts of later phases. The folder of the record key is hidden from every
agent (`key_dir`), and so are the web browsers' profile folders (`hidden_paths`): they hold the
dashboard's session cookie, which carries a human's approvals. The user's credential stores
(`core.secrets.CREDENTIAL_STORES`, widened or narrowed by the sealed `.automaton/config.json`)
are masked (`secret_stores`): empty where a mount namespace is in force, hidden like the key
where only Landlock or Seatbelt is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from automaton.core import phases as ph
from automaton.core.errors import BadInput
from automaton.core.record import record
from automaton.store.layout import DOT, TASKS, Project

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


@record(frozen=True)
class SecretStores:
    """The credential stores in force for one agent: `entries` (the `~/…` or absolute entries
    hidden: the packaged list less `unhidden` and `provider`, plus the project's `hide`),
    `unhidden` (taken out by the sealed config.json's `sandbox.unhide`), `provider` (kept
    readable because the agent's model provider needs them, `core.secrets.PROVIDERS`) and
    `paths` (the absolute paths of `entries` that exist now: what a `Policy` masks)."""

    entries: tuple[str, ...]
    unhidden: tuple[str, ...]
    provider: tuple[str, ...]
    paths: tuple[Path, ...]

    def notes(self) -> list[str]:
        """One line per entry a sealed change or a provider switch leaves readable to agents."""
        out = [f"sandbox: {e} is readable to agents: .automaton/config.json unhides it (sealed by a human)"
               for e in self.unhidden]
        return out + [f"sandbox: {e} is readable to the agent: its model provider needs it" for e in self.provider]


def secret_stores(project_root: Path, agent: str, home: Path | None = None,
                  env: Mapping[str, str] | None = None) -> SecretStores:
    """The credential stores no process of harness `agent` ("command" for a verify command or
    a plain command) may read, for the project at `project_root`, under `home` (default: this
    user's), with `env` (default: this process's) for the XDG folders and provider switches.
    BadInput (exit 2) for an invalid `.automaton/config.json`; ConfigNotSealed when it is not
    the sealed one (its `sandbox` lists are then not trusted either way)."""
    from automaton.core.secrets import CREDENTIAL_STORES, expand, provider_stores
    from automaton.store.project_config import sandbox_lists

    base, env = home or Path.home(), os.environ if env is None else env
    lists = sandbox_lists(Project(project_root.resolve()))
    keep = provider_stores(env, agent)
    packaged = [e for e in CREDENTIAL_STORES if e not in lists.unhide and e not in keep]
    entries = tuple(dict.fromkeys([*packaged, *lists.hide]))
    paths = tuple(dict.fromkeys(p for e in entries for p in expand(e, base, env) if p.exists()))
    return SecretStores(entries, lists.unhide, tuple(sorted(keep - set(lists.unhide))), paths)


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


def project_writable(root: Path, phase: str | None, task_dir: Path | None) -> list[Path]:
    """The project paths the kernel lets an agent at `phase` write (see the module table).
    `phase` None: no task is in force."""
    if phase is None:
        return _project_entries(root)
    base = phase.partition(":")[0]
    if ":" in phase or base not in ph.ARTIFACT or task_dir is None:
        return []
    if base == "implement":
        return [*_project_entries(root), task_dir]
    if base == "doc_review":
        docs = root / "docs"
        return [task_dir, *([docs] if docs.is_dir() else []), *_markdown(root)]
    return [task_dir]
